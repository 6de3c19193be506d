package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// ConsumerMaxBytes is the longest consumer name the inbox accepts.
const ConsumerMaxBytes = 255

// RollbackTimeoutDefault bounds a rollback that runs after the message's
// context was cancelled.
const RollbackTimeoutDefault = 5 * time.Second

// PayloadMismatchPolicy says what the inbox does with a copy of an event
// whose event id is in the inbox but whose payload hash differs.
type PayloadMismatchPolicy int

const (
	// PayloadMismatchReject (the default) returns a permanent error with
	// reason ackgap.ReasonEventIDConflict: the message is dead-lettered,
	// not skipped, because a producer reused an id for another event.
	PayloadMismatchReject PayloadMismatchPolicy = iota
	// PayloadMismatchSkip treats the copy as a plain duplicate, for
	// producers whose payloads legitimately differ between copies (a
	// timestamp set on each send).
	PayloadMismatchSkip
)

// ObserverFunc receives an ackgap.InboxReport per pass of a message
// through the inbox (one per attempt). It is called on the handler's
// goroutine and must not block. The same report is recorded on the
// message's ackgap.Delivery, where telemetry reads it: an observer is for
// code of your own.
type ObserverFunc func(ctx context.Context, r *ackgap.InboxReport)

// InboxConfig configures [Inbox].
type InboxConfig struct {
	// Consumer names the consumer whose inbox rows this middleware writes
	// (docs/design.md invariant 6). Required, at most ConsumerMaxBytes bytes.
	Consumer string
	// EventID extracts the event id. Default
	// EventIDFromMetadata(ackgap.MetadataEventIDKey).
	EventID EventIDFunc
	// MaxEventIDBytes is the longest event id accepted; a longer one is
	// rejected with reason ackgap.ReasonEventIDTooLong. Default
	// ackgap.MaxEventIDBytesDefault (255).
	MaxEventIDBytes int
	// PayloadMismatch says what to do when an event id arrives again with
	// another payload. Default PayloadMismatchReject.
	PayloadMismatch PayloadMismatchPolicy
	// Observer, when set, receives an ackgap.InboxReport per attempt.
	// Default nil.
	Observer ObserverFunc
	// RollbackTimeout bounds a rollback on a context that may already be
	// cancelled. Default RollbackTimeoutDefault (5 s).
	RollbackTimeout time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Dispatch, when set, carries out the outbox rows a handler adds right
	// after the commit, in this process, without a claim: typically the
	// *outbox.Relay running in the same process (see [Dispatcher]). Rows
	// beyond its room, and every row when it is not running, go to relays
	// as usual. Default nil: relays claim every row.
	Dispatch Dispatcher
}

// WithDefaults returns a copy of c with every zero field set to its default.
func (c InboxConfig) WithDefaults() InboxConfig {
	if c.EventID == nil {
		c.EventID = EventIDFromMetadata(ackgap.MetadataEventIDKey)
	}
	if c.MaxEventIDBytes == 0 {
		c.MaxEventIDBytes = ackgap.MaxEventIDBytesDefault
	}
	if c.RollbackTimeout == 0 {
		c.RollbackTimeout = RollbackTimeoutDefault
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate returns an error wrapping "invalid config" that names every
// bad field of c at once, or nil. Run it on c.WithDefaults(): zero fields
// with a default are errors here. Package batch and [Inbox] share it, so
// the inbox is checked one way wherever it is configured.
//
// The error wraps, with a single %w, the errors.Join of the problems:
// errors.Unwrap returns them, for a configuration that embeds an
// InboxConfig and joins its own problems with them (batch.Config).
func (c InboxConfig) Validate() error {
	var errs []error
	switch {
	case c.Consumer == "":
		errs = append(errs, errors.New("Consumer is empty: inbox rows are scoped by consumer name"))
	case len(c.Consumer) > ConsumerMaxBytes:
		errs = append(errs, fmt.Errorf("Consumer is %d bytes, over the limit of %d", len(c.Consumer), ConsumerMaxBytes))
	}
	if c.MaxEventIDBytes < 1 {
		errs = append(errs, fmt.Errorf("MaxEventIDBytes is %d, must be at least 1", c.MaxEventIDBytes))
	}
	if c.RollbackTimeout < 0 {
		errs = append(errs, fmt.Errorf("RollbackTimeout is %s, must not be negative", c.RollbackTimeout))
	}
	if c.PayloadMismatch != PayloadMismatchReject && c.PayloadMismatch != PayloadMismatchSkip {
		errs = append(errs, fmt.Errorf("PayloadMismatch %d is not a middleware.PayloadMismatchPolicy", c.PayloadMismatch))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// Inbox returns the dedupe-in-transaction middleware for store. See the
// package doc for what it does with each message. It returns an error
// wrapping "invalid config" when cfg is nil or invalid (every problem at
// once) or store is nil.
func Inbox[TTx any](store stores.Store[TTx], cfg *InboxConfig) (message.HandlerMiddleware, error) {
	if cfg == nil {
		return nil, errors.New("invalid config: InboxConfig is nil: Consumer is required")
	}
	if store == nil {
		return nil, errors.New("invalid config: store is nil")
	}
	c := cfg.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	in := &inbox[TTx]{store: store, cfg: c}
	return in.middleware, nil
}

type inbox[TTx any] struct {
	store stores.Store[TTx]
	cfg   InboxConfig
}

// classify passes err through the store's classifier: a handler's own
// statements return driver errors unclassified (docs/errors.md).
func (in *inbox[TTx]) classify(err error) error {
	return in.store.ClassifyError(err)
}

func (in *inbox[TTx]) middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		rep := &ackgap.InboxReport{Consumer: in.cfg.Consumer, Received: in.cfg.Now()}
		defer func() {
			// A panic has rolled back already (see handle); report it and let
			// it go on to the router's recoverer.
			if p := recover(); p != nil {
				rep.Outcome, rep.Err = ackgap.OutcomeFailed, fmt.Errorf("ackgap inbox: handler panicked: %v", p)
				in.report(msg.Context(), rep)
				panic(p)
			}
		}()
		produced, err := in.handle(msg, h, rep)
		rep.Err = err
		in.report(msg.Context(), rep)
		return produced, err
	}
}

// report records rep on the message's ackgap.Delivery, when its context
// has one, and gives it to the Observer.
func (in *inbox[TTx]) report(ctx context.Context, rep *ackgap.InboxReport) {
	if d, ok := ackgap.DeliveryFromContext(ctx); ok {
		d.RecordInbox(rep)
	}
	if in.cfg.Observer != nil {
		in.cfg.Observer(ctx, rep)
	}
}

func (in *inbox[TTx]) handle(msg *message.Message, h message.HandlerFunc, rep *ackgap.InboxReport) (produced []*message.Message, err error) {
	ctx := msg.Context()
	id, err := in.cfg.EventIDOf(msg)
	rep.EventID = id
	if err != nil {
		rep.Outcome = ackgap.OutcomeRejected
		return nil, err
	}
	params := &stores.BeginInboxParams{
		Consumer: in.cfg.Consumer, EventID: id, PayloadHash: stores.PayloadHash(msg.Payload), Now: rep.Received,
		TraceParent: ackgap.TraceParentFromContext(ctx),
		Progress:    stores.ProgressOf(ctx),
	}
	// One path for every store: a store that pipelines sends the insert
	// with the handler's first statement and its verdict is read after the
	// handler returned; one that does not has resolved it already.
	begun, err := in.store.BeginInboxDeferred(ctx, params)
	if err != nil {
		rep.Outcome = ackgap.OutcomeFailed
		return nil, fmt.Errorf("ackgap inbox: begin: %w", err)
	}
	if begun.Duplicate {
		return nil, in.duplicate(begun, rep)
	}
	tx := begun.Tx

	ended := false
	defer func() {
		if ended {
			return
		}
		// Handler error, cancellation or panic: undo everything, inbox row
		// included, so a redelivery processes the message again.
		rbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.cfg.RollbackTimeout)
		defer cancel()
		_ = in.store.RollbackTx(rbCtx, tx)
		rep.Outcome = ackgap.OutcomeFailed
	}()

	hold := NewOutboxHold(in.cfg.Dispatch)
	defer hold.Release() // a no-op after Dispatch
	bound := &boundTx[TTx]{store: in.store, tx: tx, consumerName: in.cfg.Consumer, eventIDString: id, hold: hold}
	msg.SetContext(withTx(ctx, bound))
	defer msg.SetContext(ctx)
	rep.HandlerStarted = in.cfg.Now()
	produced, err = h(msg)
	if err == nil {
		// Transitions the handler did not read go to the store now, to run
		// with the commit (or at once, on a store that does not pipeline).
		err = bound.flush(msg.Context())
	}
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("ackgap inbox: context ended before commit: %w", ctx.Err())
	}
	if err != nil {
		// Whatever the handler returned, a duplicate is acked, not retried
		// (its statements failed with ackgap.ErrDuplicate and were undone).
		if verdict := in.verdict(ctx, tx); verdict != nil {
			ended = true
			return nil, in.duplicate(verdict, rep)
		}
		return nil, in.classify(err)
	}
	ended = true
	// A pending inbox insert may ride with the commit (pgxstore: with a
	// queued transition); a duplicate then fails it with
	// ackgap.ErrDuplicate, having written nothing.
	//ackgapvet:ignore multitx the one commit of the message: the commit the call graph sees below h (line 228) is another inbox's, wired into a middleware of the same handler type (VTA joins function values of one type)
	if err := in.store.CommitTx(ctx, tx); err != nil {
		if errors.Is(err, ackgap.ErrDuplicate) {
			if verdict := in.verdict(ctx, tx); verdict != nil {
				return nil, in.duplicate(verdict, rep)
			}
		}
		rep.Outcome = ackgap.OutcomeFailed
		if errors.Is(err, ackgap.ErrTransitionRefused) || errors.Is(err, ackgap.ErrIdempotencyConflict) || errors.Is(err, ackgap.ErrStoreMisconfigured) {
			// A queued statement failed (pgxstore), refused by the server
			// (a refused transition, a key conflict, a missing table): the
			// COMMIT did not run and the transaction rolled back, so the
			// outcome is known.
			return nil, fmt.Errorf("ackgap inbox: commit: %w", in.classify(err))
		}
		// The transaction is over either way; a redelivery finds the inbox
		// row if the commit happened after all.
		return nil, fmt.Errorf("ackgap inbox: commit: %w: %w", ackgap.ErrCommitUnknown, in.classify(err))
	}
	rep.Committed = in.cfg.Now()
	rep.Outcome = ackgap.OutcomeApplied
	hold.Dispatch()
	return produced, nil
}

// verdict returns the inbox insert's verdict when it found a duplicate,
// else nil (not a duplicate, or unknown).
func (in *inbox[TTx]) verdict(ctx context.Context, tx TTx) *stores.BeginInboxResult[TTx] {
	v, err := in.store.InboxVerdictTx(ctx, tx)
	if err != nil || !v.Duplicate {
		return nil
	}
	return v
}

// duplicate sets rep for a delivery whose inbox row was there and returns
// nil (acked as a duplicate) or, for an id reused with another payload
// under PayloadMismatchReject, a permanent error (dead-lettered).
func (in *inbox[TTx]) duplicate(begun *stores.BeginInboxResult[TTx], rep *ackgap.InboxReport) error {
	rep.FirstTraceParent = begun.TraceParent
	if begun.PayloadMismatch && in.cfg.PayloadMismatch == PayloadMismatchReject {
		rep.Outcome = ackgap.OutcomeRejected
		return ackgap.Permanent(ackgap.ReasonEventIDConflict,
			fmt.Errorf("%w: consumer %q, event id %q", ackgap.ErrEventIDConflict, in.cfg.Consumer, rep.EventID))
	}
	rep.Outcome = ackgap.OutcomeDuplicate
	return nil
}

// EventIDOf returns msg's event id as the inbox middleware reads it: with
// c.EventID, checked against c.MaxEventIDBytes (c with defaults: see
// WithDefaults). A message without one, or whose extractor fails, is a
// permanent error wrapping ackgap.ErrMissingEventID (reason
// missing_event_id); an over-long one, ackgap.ErrEventIDTooLong (reason
// event_id_too_long), returned with the id; one that is not valid UTF-8 or
// holds a NUL byte, ackgap.ErrEventIDInvalid (reason event_id_invalid),
// returned as "" (see [ackgap.CheckEventID]). Extractor errors that are permanent
// already are returned as they are.
func (c InboxConfig) EventIDOf(msg *message.Message) (string, error) {
	id, err := c.EventID(msg)
	if err != nil {
		if ackgap.IsPermanent(err) {
			return "", err
		}
		return "", ackgap.Permanent(ackgap.ReasonMissingEventID, fmt.Errorf("%w: extractor: %w", ackgap.ErrMissingEventID, err))
	}
	if id == "" {
		return "", ackgap.Permanent(ackgap.ReasonMissingEventID,
			fmt.Errorf("%w (message uuid %q, consumer %q)", ackgap.ErrMissingEventID, msg.UUID, c.Consumer))
	}
	switch err := ackgap.CheckEventID(id, c.MaxEventIDBytes); {
	case errors.Is(err, ackgap.ErrEventIDInvalid):
		return "", ackgap.Permanent(ackgap.ReasonEventIDInvalid, err)
	case err != nil:
		return id, ackgap.Permanent(ackgap.ReasonEventIDTooLong, err)
	}
	return id, nil
}
