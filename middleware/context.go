package middleware

import (
	"context"
	"errors"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/inboxctx"
	"github.com/ackgap/ackgap/stores"
)

// boundTx binds one message's transaction to its store, consumer and event
// id; it is what ackgap.AddOutbox and ackgap.ApplyTransition work through.
type boundTx[TTx any] struct {
	store         stores.Store[TTx]
	tx            TTx
	consumerName  string
	eventIDString string
	// held are the transitions of ApplyTransition, in order; unsent until
	// the handler reads one (Result) or Flush.
	held []*heldTransition
	// hold collects the rows held for direct dispatch; nil without a
	// Dispatcher.
	hold *OutboxHold
}

// heldTransition is a guarded transition of ApplyTransition and its rows.
type heldTransition struct {
	t    ackgap.Transition
	rows []ackgap.OutboxEntry
	// done: run already (res or err set); read: the handler read it.
	done, read bool
	res        *ackgap.TransitionResult
	err        error
	// queued: handed to the store's QueueTransitionTx by Flush.
	queued bool
	// applied: the transition applied and its rows were written (known
	// once it ran: at Result, or from the store's QueueTransitionParams.Ran
	// after Flush); its held rows are dispatched only then.
	applied bool
}

// AddOutbox implements ackgap.AddOutbox.
func (b *boundTx[TTx]) AddOutbox(ctx context.Context, e *ackgap.OutboxEntry) error {
	if err := validateRow(e); err != nil {
		return err
	}
	row := b.fill(ctx, e)
	mark := b.hold.Mark()
	b.hold.hold(&row, nil)
	if err := b.store.QueueOutboxTx(ctx, b.tx, &row); err != nil {
		b.hold.RollbackTo(mark) // not written: never dispatch it
		return err
	}
	return nil
}

// ApplyTransition implements ackgap.ApplyTransition: it validates and
// holds t and its rows; the returned func resolves it.
func (b *boundTx[TTx]) ApplyTransition(ctx context.Context, t *ackgap.Transition, rows []*ackgap.OutboxEntry) (func(context.Context) (*ackgap.TransitionResult, error), error) {
	h := &heldTransition{t: *t, rows: make([]ackgap.OutboxEntry, len(rows))}
	if err := h.t.WithDefaults().Validate(); err != nil {
		return nil, err
	}
	for i, r := range rows {
		if err := validateRow(r); err != nil {
			return nil, err
		}
		h.rows[i] = b.fill(ctx, r)
	}
	for i := range h.rows {
		b.hold.hold(&h.rows[i], &h.applied)
	}
	b.held = append(b.held, h)
	return func(ctx context.Context) (*ackgap.TransitionResult, error) {
		if h.queued {
			return nil, errFlushed
		}
		if !h.done {
			// Earlier transitions run first, in order.
			for _, e := range b.held {
				if e == h {
					break
				}
				if err := b.run(ctx, e); err != nil {
					return nil, err
				}
			}
		}
		h.read = true
		if err := b.run(ctx, h); err != nil {
			return nil, err
		}
		return h.res, nil
	}, nil
}

// errFlushed: Result was called on a transition handed to the store
// unread, after the handler returned.
var errFlushed = errors.New("ackgap: PendingTransition.Result called after the handler returned")

// run applies h at once, if not done yet: the transition through
// TransitionIfStateTx, then, if it applied, its rows through QueueOutboxTx.
func (b *boundTx[TTx]) run(ctx context.Context, h *heldTransition) error {
	if h.done {
		return h.err
	}
	h.done = true
	h.res, h.err = b.store.TransitionIfStateTx(ctx, b.tx, &h.t)
	if h.err != nil || !h.res.Applied() {
		return h.err
	}
	for i := range h.rows {
		if h.err = b.store.QueueOutboxTx(ctx, b.tx, &h.rows[i]); h.err != nil {
			h.res = nil
			return h.err
		}
	}
	h.applied = true
	return nil
}

// flush hands every transition the handler did not read to the store
// (QueueTransitionTx: a store that pipelines sends it with the commit) and
// fails for one that ran and was refused without the handler reading it.
func (b *boundTx[TTx]) flush(ctx context.Context) error {
	held := b.held
	b.held = nil
	for _, h := range held {
		switch {
		case h.done && !h.read && h.err == nil:
			if err := h.res.Err(); err != nil {
				return err
			}
		case !h.done:
			h.queued = true
			if err := b.store.QueueTransitionTx(ctx, b.tx, &stores.QueueTransitionParams{Transition: h.t, Outbox: h.rows,
				Ran: func(applied bool) { h.applied = applied }}); err != nil {
				return err
			}
		}
	}
	return nil
}

// WithTx returns a copy of ctx in which tx is the message's transaction,
// as the inbox middleware sets it: ackgap.TxFromContext,
// ackgap.EventIDFromContext, ackgap.AddOutbox and ackgap.ApplyTransition
// then work on tx through store, recording consumer and eventID on outbox
// rows. It is for code that opens the transaction itself, such as package
// batch (one transaction, a savepoint per message); the caller calls
// [Flush] with the returned context once the handler returned nil, then
// commits (or releases its savepoint) or rolls back tx. Rows the handler
// adds are held for direct dispatch in hold (nil: none are); the caller
// dispatches or releases hold when tx ends (see [OutboxHold]).
func WithTx[TTx any](ctx context.Context, store stores.Store[TTx], tx TTx, consumer, eventID string, hold *OutboxHold) context.Context {
	return withTx(ctx, &boundTx[TTx]{store: store, tx: tx, consumerName: consumer, eventIDString: eventID, hold: hold})
}

func withTx[TTx any](ctx context.Context, b *boundTx[TTx]) context.Context {
	ctx = inboxctx.With(ctx, b.tx, b.eventIDString)
	return inboxctx.WithOps(ctx, b)
}

// flusher is the part of boundTx that Flush needs, whatever TTx.
type flusher interface {
	flush(ctx context.Context) error
}

// Flush hands the guarded transitions of ackgap.ApplyTransition that the
// handler did not read to the store, to run before or with the commit, and
// returns the permanent refusal (ackgap.ErrTransitionRefused) of one that
// ran and that the handler did not read. ctx is a context from [WithTx]
// (the message's, after the handler returned nil); call it once, before
// the commit; outside WithTx it does nothing and returns nil. The inbox
// middleware calls it itself. An error means: roll back.
func Flush(ctx context.Context) error {
	f, ok := inboxctx.Ops(ctx).(flusher)
	if !ok {
		return nil
	}
	return f.flush(ctx)
}

// validateRow validates an outbox row a handler adds: an invalid row is
// the handler's bad data, which no retry fixes, so its error is permanent
// (reason ackgap.ReasonInvalidOutboxRow): the message is dead-lettered at
// once, nothing committed.
func validateRow(e *ackgap.OutboxEntry) error {
	if e == nil {
		return ackgap.Permanent(ackgap.ReasonInvalidOutboxRow, errors.New("invalid outbox row: nil"))
	}
	if err := e.Validate(); err != nil {
		return ackgap.Permanent(ackgap.ReasonInvalidOutboxRow, err)
	}
	return nil
}

// fill returns a copy of p with the consumer and event id of the message
// where p leaves them empty, and, when the message is traced
// (ackgap.TraceParentFromContext) and p's headers have no traceparent,
// that traceparent added to a copy of the headers: the relay's span for
// the row then links to the span of the delivery that wrote it.
func (b *boundTx[TTx]) fill(ctx context.Context, p *ackgap.OutboxEntry) ackgap.OutboxEntry {
	row := *p
	if row.Consumer == "" {
		row.Consumer = b.consumerName
	}
	if row.EventID == "" {
		row.EventID = b.eventIDString
	}
	if tp := ackgap.TraceParentFromContext(ctx); tp != "" && row.Headers[ackgap.TraceParentHeader] == "" {
		h := make(map[string]string, len(row.Headers)+1)
		for k, v := range row.Headers {
			h[k] = v
		}
		h[ackgap.TraceParentHeader] = tp
		row.Headers = h
	}
	return row
}
