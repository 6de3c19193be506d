package ackgap

import (
	"time"
)

// Outcome is what the inbox did with one pass of a message (one attempt).
type Outcome string

const (
	// OutcomeApplied: the handler ran and its transaction committed.
	OutcomeApplied Outcome = "applied"
	// OutcomeDuplicate: the event was in the inbox; nothing was written
	// and the message is acked. With a store that pipelines the inbox
	// insert (pgxstore) the handler ran up to its first statement, which
	// failed with ErrDuplicate and was rolled back; with others it was not
	// called.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeRejected: the message cannot be processed (no event id, an
	// over-long one, an id reused with another payload); a permanent error
	// was returned. Package batch also reports a handler's permanent error
	// ([Permanent]) as rejected, since it dead-letters rather than
	// retries; behind the router that error is OutcomeFailed here and the
	// router's dead-letter step follows.
	OutcomeRejected Outcome = "rejected"
	// OutcomeFailed: the handler failed, panicked, was cancelled, or the
	// commit failed; everything was rolled back and an error returned.
	OutcomeFailed Outcome = "failed"
)

// InboxReport is the inbox's part of a [Delivery]'s timeline: what one
// pass of the message through the inbox (the middleware, or package batch)
// did. The inbox records it on the message's Delivery
// ([Delivery.RecordInbox]) and gives it to its Observer when it returns
// (after the commit, before the ack).
type InboxReport struct {
	Consumer string
	// EventID is the message's event id; "" when it had none, and when
	// its id was refused as not UTF-8 or holding a NUL byte (Outcome
	// rejected, Err wrapping ErrEventIDInvalid, whose text holds the id
	// quoted): such bytes cannot travel in logs, span attributes or the
	// store, so only the error carries them, escaped.
	EventID string
	Outcome Outcome
	// Err is the error returned to the router (nil for applied and
	// duplicate).
	Err error
	// FirstTraceParent is, for a duplicate, the W3C traceparent of the
	// delivery that applied the event, when that delivery was traced and
	// the store keeps it; "" otherwise.
	FirstTraceParent string
	// Received is when the inbox got the message; HandlerStarted when the
	// handler was called (zero if it was not); Committed when the commit
	// returned nil (zero unless applied).
	Received, HandlerStarted, Committed time.Time
}

// RecordInbox appends a copy of r to d's timeline. The inbox middleware
// and package batch call it once per pass of the message, on the
// handler's goroutine.
func (d *Delivery) RecordInbox(r *InboxReport) {
	d.mu.Lock()
	d.inbox = append(d.inbox, *r)
	d.mu.Unlock()
}

// Inbox returns a copy of the inbox reports recorded on d, oldest first:
// one per attempt, none when the message never reached the inbox.
func (d *Delivery) Inbox() []InboxReport {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]InboxReport(nil), d.inbox...)
}
