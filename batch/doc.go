// Package batch is ackgap's batched mode: one database transaction for
// many messages (an SQS receive of 10, a Lambda batch, a slice of a Kafka
// partition), with a savepoint each, so that the per-message costs of the
// inbox (BEGIN, the inbox insert, COMMIT and its WAL flush) are paid once
// per batch, and a set-based handler can apply the whole batch with one
// statement.
//
//	p, err := batch.New[pgx.Tx](store, &batch.Config[pgx.Tx]{
//		InboxConfig: middleware.InboxConfig{Consumer: "billing"},
//		Handler:     chargeOrder, // router.HandlerFunc: one message, under its own savepoint
//		// Optional: the whole batch at once (one round: at most one message per key);
//		// on error the round falls back to Handler.
//		BatchHandler: func(ctx context.Context, tx pgx.Tx, msgs []*message.Message) error { ... },
//	})
//	res, err := p.Process(ctx, msgs)
//	for i, m := range res.Messages {
//		switch m.Outcome {
//		case ackgap.OutcomeApplied, ackgap.OutcomeDuplicate: // ack msgs[i]
//		case ackgap.OutcomeRejected: // dead-letter msgs[i] (m.Err is permanent)
//		case ackgap.OutcomeFailed: // nack msgs[i]: it is redelivered
//		}
//	}
//
// Every stores.Store has the batched methods (pgxstore, sqlitestore and
// mysqlstore implement them). Process keeps every invariant of the per-message inbox (docs/design.md):
//
//   - The inbox rows of the whole batch are inserted by one statement in
//     the batch's transaction, under the unique constraint; rows already
//     there are duplicates, and a second copy of an event inside one batch
//     is a duplicate of the first. Two concurrent batches sharing an event
//     id: exactly one applies it.
//   - A handler error or panic undoes that message only (a rollback to its
//     savepoint), and its inbox row is deleted in the same transaction, so
//     its redelivery applies it. The other messages commit.
//   - Nothing is final before the commit: Process returns after it, and a
//     failed commit or a cancelled context fails every message of the
//     batch, so that all are redelivered (their inbox rows did not
//     commit). Acknowledge only after Process returned (invariant 4); the
//     brokers' batch adapters (sqsbroker.LambdaBatchHandler,
//     sqsbroker.BatchConsumer) do.
//
// Keys and rounds. A batch may hold several messages of one ordering key
// (Config.KeyOf; by default the key of the message's ackgap.Delivery,
// which kafkabroker fills with the Kafka record key), in the order they
// are to be applied. Process then runs the handlers in rounds inside the
// one transaction: round 1 has the first message of each key, round 2 the
// second of each key that has one, and so on; the BatchHandler is called
// once per round, under a savepoint per round, so one call never holds two
// messages of one key (a set-based UPDATE ... FROM unnest(...) gets one
// row per key). A message that its handler failed or rejected holds back
// the later messages of its key in the batch: they are not applied and
// fail with ErrHeldBack, to be redelivered after it. All rounds commit
// together; acknowledge after Process returned, as always. A batch whose
// keys are all distinct (or that has none) is one round.
//
// The per-message Handler sees the same context as behind the inbox
// middleware: ackgap.TxFromContext, ackgap.ApplyTransition and
// ackgap.AddOutbox work in it. The BatchHandler gets the transaction and the
// batch's messages that are neither rejected nor duplicates, and writes
// its outbox rows with ackgap.AddOutboxMany, in one statement.
//
// Direct dispatch: with Config.Dispatch set to the outbox.Relay running in
// the same process, the rows the handlers add are carried out right after
// the batch's commit, without a claim; rows of a message rolled back to
// its savepoint, or of a failed BatchHandler, are never handed over (see
// middleware.Dispatcher).
//
// Tracing: set Config.Trace to what telemetry.Telemetry.Begin returns and
// Config.Observer to that Telemetry's Observer; every message then has its
// consumer span, with the ack gap and lease headroom, as behind the router
// (the batch adapters acknowledge the messages and report the broker's
// confirmation), and a duplicate's span links to the span of the delivery
// that applied the event.
//
// Mind the batch size on PostgreSQL with the per-message Handler: every
// savepoint that writes is a subtransaction, and a transaction with more
// than 64 of them overflows each backend's subtransaction cache, which
// slows snapshots server-wide until it ends. The BatchHandler path takes
// one savepoint per round (one per batch when no key repeats).
package batch
