// Package retention prunes old inbox rows: [Pruner.PruneOnce] as an API,
// [Pruner.Run] as a background job that any number of service instances
// may run at once.
//
//	p, err := retention.New(store, &retention.Config{
//		RedeliveryWindow: 7 * 24 * time.Hour, // Kafka topic retention.ms
//		Retention:        8 * 24 * time.Hour,
//		OnPrune: func(deleted int64, err error) {
//			if err != nil {
//				log.Printf("prune inbox: %v", err)
//			}
//		},
//	})
//	if err != nil {
//		return err // invalid config: names every bad field
//	}
//	go func() { _ = p.Run(ctx) }() // returns nil once ctx is done
//
// store is any [stores.Operator] (it calls PruneInbox): stores/pgxstore,
// stores/sqlitestore and stores/mysqlstore implement it.
//
// An inbox row is what makes a redelivered message a duplicate. Deleting
// it while the broker can still redeliver or replay the message lets that
// copy through as new, so rows are kept at least as long as the broker's
// redelivery window (docs/design.md invariant 8): Config.Retention shorter than
// Config.RedeliveryWindow is a configuration error, reported by [New]. The
// defaults fit SQS: a 4-day window (SQS's default MessageRetentionPeriod)
// and a 15-day retention (SQS's longest, 14 days, plus 1 day of
// dead-letter slack). For Kafka set RedeliveryWindow to the topic's
// retention (7 days by default) or the furthest back consumer offsets may
// be reset. A topic kept forever has no safe retention: do not prune its
// consumers' rows, and prune each other consumer with a Pruner of its own
// (Config.Consumer).
//
// Pruning deletes in batches of Config.BatchSize rows, each a short
// transaction. Concurrent pruners, in one process or in many, are safe and
// delete each row once: on PostgreSQL each batch selects its rows FOR
// UPDATE SKIP LOCKED, so one pruner's batch passes over the rows another is
// deleting instead of waiting for them; SQLite has a single writer and
// pruners take turns.
package retention
