// Package middleware holds ackgap's Watermill middleware: [Inbox], the
// dedupe-in-transaction step, as a plain message.HandlerMiddleware that
// drops into any existing Watermill router.
//
//	inbox, err := middleware.Inbox[pgx.Tx](store, &middleware.InboxConfig{Consumer: "billing"})
//	if err != nil { ... }
//	r.AddConsumerHandler("billing", "orders.placed", sub, func(msg *message.Message) error {
//		tx, _ := pgxstore.TxFromContext(msg.Context())
//		_, err := tx.Exec(msg.Context(), `UPDATE ...`)
//		return err
//	}).AddMiddleware(inbox)
//
// For each message the middleware extracts the event id, begins a
// transaction and inserts the inbox row (consumer, event id) first. A
// duplicate rolls back, skips the handler and returns nil, so the message
// is acked. A store that pipelines (pgxstore; see
// stores.Store.BeginInboxDeferred) sends BEGIN and the insert with the handler's first statement instead, saving
// a round trip: for a duplicate that statement fails with
// ackgap.ErrDuplicate, everything is rolled back and the message is acked
// as a duplicate whatever the handler returns; the handler's code before
// its first statement did run, so it must not call out (docs/design.md
// invariant 7: effects go through the outbox). Otherwise the handler runs with the transaction in the message
// context (ackgap.TxFromContext, ackgap.ApplyTransition,
// ackgap.AddOutbox); a nil
// return commits, and the commit's error is returned, so Watermill acks
// only after the commit (docs/design.md invariant 4). A handler error, a panic,
// a cancelled context or a failed commit rolls back everything, inbox row
// included, and the error is returned: the message is nacked and processed
// again on redelivery.
//
// Messages the middleware cannot process return an ackgap.PermanentError
// (a missing or over-long event id, an event id reused with another
// payload). Route those to a dead-letter topic: package router does, and
// with a router of your own Watermill's middleware.PoisonQueueWithFilter
// with ackgap.IsPermanent does.
package middleware
