// Package router builds a Watermill router whose handlers are safe under
// redelivery: every handler runs behind the inbox middleware, typed by the
// store's transaction, with the chain in the right order.
//
//	store, _ := sqlitestore.Open(ctx, "app.db", nil)
//	r, err := router.New[*sql.Tx](store, &router.Config{DeadLetter: pub})
//	err = r.AddHandler("billing", "orders.placed", sub,
//		func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
//			// Held back and sent with the commit; refused: dead-letter.
//			_, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{
//				Table: "orders", Key: id, From: []string{"pending"}, To: "charging"})
//			return err
//		})
//	err = r.Run(ctx)
//
// The chain, outermost first, for each handler:
//
//  1. Config.Middlewares: the hook point for tracing (package telemetry).
//  2. Dead letter: a permanent error (ackgap.Permanent), or any other error
//     still failing after Config.MaxAttempts, sends the message to
//     Config.DeadLetterTopic with its reason in metadata and acks it. A
//     cancelled context and ackgap.ErrStoreUnavailable never dead-letter:
//     the message is nacked and redelivered.
//  3. Retry: up to MaxAttempts in place, with exponential backoff from
//     RetryInitialInterval to RetryMaxInterval; permanent errors and
//     cancellation are not retried.
//  4. Recoverer: a panic becomes an error (and is retried like one).
//  5. Timeout: the message context ends after HandlerTimeout.
//  6. Inbox (package middleware): dedupe-in-transaction and commit.
//  7. The handler.
//
// The consumer name given to AddHandler is the inbox scope (docs/design.md
// invariant 6); one consumer may subscribe several topics or partitions.
// The Watermill handler is named "<consumer>/<topic>".
package router
