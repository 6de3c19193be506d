// Package ackgap holds the outcomes and errors shared by every ackgap
// package: the sentinel errors that stores translate their driver errors
// into, and the control errors a handler returns to say what should happen
// to a message it cannot process.
//
// ackgap makes a second delivery of a message harmless. Queues deliver at
// least once; the time between doing the work and acknowledging it (the
// ack gap) is where crashes, expired visibility timeouts and rebalances turn
// into redeliveries. The inbox middleware (package middleware) writes an
// inbox row keyed by (consumer, event id) in the same database transaction
// as the handler's state change and outbox rows, and the broker hears "done"
// only after that transaction committed.
//
// A handler that meets input it can never process returns [Permanent]:
//
//	if err := json.Unmarshal(msg.Payload, &v); err != nil {
//		return ackgap.Permanent(ackgap.ReasonBadPayload, err)
//	}
//
// The router then rolls the transaction back and sends the message to the
// dead-letter topic with the reason in its metadata, instead of retrying it
// forever. Any other error is retried.
package ackgap
