package middleware

import (
	"context"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/inboxctx"
	"github.com/ackgap/ackgap/stores"
)

// deliveryKey is the context key of the store-agnostic view of the
// message's transaction.
type deliveryKey struct{}

// delivery binds one message's transaction to its store, consumer and
// event id.
type delivery interface {
	consumer() string
	eventID() string
	transition(ctx context.Context, p *stores.TransitionParams) (*stores.TransitionResult, error)
	insertOutbox(ctx context.Context, p *stores.OutboxInsertParams) (*stores.OutboxInsertResult, error)
	queueOutbox(ctx context.Context, p *stores.OutboxInsertParams) error
	queueTransition(ctx context.Context, p *stores.QueueTransitionParams) error
}

type boundTx[TTx any] struct {
	store         stores.Store[TTx]
	tx            TTx
	consumerName  string
	eventIDString string
}

func (b *boundTx[TTx]) consumer() string { return b.consumerName }
func (b *boundTx[TTx]) eventID() string  { return b.eventIDString }
func (b *boundTx[TTx]) transition(ctx context.Context, p *stores.TransitionParams) (*stores.TransitionResult, error) {
	return b.store.TransitionIfStateTx(ctx, b.tx, p)
}
func (b *boundTx[TTx]) insertOutbox(ctx context.Context, p *stores.OutboxInsertParams) (*stores.OutboxInsertResult, error) {
	return b.store.InsertOutboxTx(ctx, b.tx, p)
}
func (b *boundTx[TTx]) queueOutbox(ctx context.Context, p *stores.OutboxInsertParams) error {
	return b.store.QueueOutboxTx(ctx, b.tx, p)
}
func (b *boundTx[TTx]) queueTransition(ctx context.Context, p *stores.QueueTransitionParams) error {
	return b.store.QueueTransitionTx(ctx, b.tx, p)
}

// WithTx returns a copy of ctx in which tx is the message's transaction,
// as the inbox middleware sets it: ackgap.TxFromContext,
// ackgap.EventIDFromContext,
// TransitionIfState, QueueTransition, AddOutbox and QueueOutbox then work
// on tx through store, recording consumer and eventID on outbox rows. It
// is for code that opens the transaction itself, such as package batch
// (one transaction, a savepoint per message); the caller commits or rolls
// back tx.
func WithTx[TTx any](ctx context.Context, store stores.Store[TTx], tx TTx, consumer, eventID string) context.Context {
	return withTx(ctx, &boundTx[TTx]{store: store, tx: tx, consumerName: consumer, eventIDString: eventID})
}

func withTx[TTx any](ctx context.Context, b *boundTx[TTx]) context.Context {
	ctx = inboxctx.With(ctx, b.tx, b.eventIDString)
	return context.WithValue(ctx, deliveryKey{}, delivery(b))
}

// TransitionIfState applies a guarded transition in the message's
// transaction, whatever the store: see stores.TransitionParams. It returns
// ackgap.ErrNoTransaction outside the inbox middleware. A refused
// transition is a result, not an error; return result.Err() to dead-letter
// the message.
func TransitionIfState(ctx context.Context, p *stores.TransitionParams) (*stores.TransitionResult, error) {
	d, ok := ctx.Value(deliveryKey{}).(delivery)
	if !ok {
		return nil, ackgap.ErrNoTransaction
	}
	return d.transition(ctx, p)
}

// AddOutbox adds an outbox row in the message's transaction, whatever the
// store, recording the consumer and event id that wrote it when p leaves
// them empty, and the delivery's traceparent in the row's headers when the
// message is traced (package telemetry) and p sets none. It returns ackgap.ErrNoTransaction outside the inbox
// middleware, and a permanent error wrapping ackgap.ErrIdempotencyConflict
// when the key exists with another payload. The same key with the same
// payload is a duplicate result, not an error.
func AddOutbox(ctx context.Context, p *stores.OutboxInsertParams) (*stores.OutboxInsertResult, error) {
	d, ok := ctx.Value(deliveryKey{}).(delivery)
	if !ok {
		return nil, ackgap.ErrNoTransaction
	}
	row := fill(ctx, d, p)
	return d.insertOutbox(ctx, &row)
}

// QueueOutbox adds an outbox row to the message's transaction like
// [AddOutbox], for handlers that do not read the row's id or duplicate
// flag: on a store that pipelines (pgxstore) the
// insert is held back and sent with the transaction's next statement or
// its commit, in the same round trip, instead of costing one of its own;
// on other stores it is inserted at once. It validates p at once and
// returns ackgap.ErrNoTransaction outside the inbox middleware. A key that
// exists with another payload is still a permanent error wrapping
// ackgap.ErrIdempotencyConflict, but it may come from the handler's next
// statement or from the commit, which then fails and rolls everything back:
// the message is dead-lettered either way.
func QueueOutbox(ctx context.Context, p *stores.OutboxInsertParams) error {
	d, ok := ctx.Value(deliveryKey{}).(delivery)
	if !ok {
		return ackgap.ErrNoTransaction
	}
	row := fill(ctx, d, p)
	return d.queueOutbox(ctx, &row)
}

// QueueTransition applies the guarded transition p in the message's
// transaction and, only if it applies, adds the outbox rows then (filled
// in with the consumer and event id like AddOutbox): the common shape of a
// handler that moves one row and records the effects of the move. The
// handler does not learn the outcome; use TransitionIfState when it must.
// A transition already applied writes nothing and the message is acked; a
// refused one is a permanent error wrapping ackgap.ErrTransitionRefused
// (dead-lettered, everything rolled back); a row whose key exists with
// another payload, a permanent ackgap.ErrIdempotencyConflict.
//
// On a store that pipelines (pgxstore) all of it
// is one statement held back and sent with the transaction's next
// statement or its commit, so those errors may come from there; with
// pgxstore a handler that does nothing else costs one round trip. On other
// stores it runs at once. It returns ackgap.ErrNoTransaction outside the
// inbox middleware, and invalid params at once.
func QueueTransition(ctx context.Context, p *stores.TransitionParams, then ...*stores.OutboxInsertParams) error {
	d, ok := ctx.Value(deliveryKey{}).(delivery)
	if !ok {
		return ackgap.ErrNoTransaction
	}
	q := &stores.QueueTransitionParams{Transition: *p, Outbox: make([]stores.OutboxInsertParams, len(then))}
	for i, row := range then {
		q.Outbox[i] = fill(ctx, d, row)
	}
	return d.queueTransition(ctx, q)
}

// fill returns a copy of p with the consumer and event id of the message
// where p leaves them empty, and, when the message is traced
// (ackgap.TraceParentFromContext) and p's headers have no traceparent,
// that traceparent added to a copy of the headers: the relay's span for
// the row then links to the span of the delivery that wrote it.
func fill(ctx context.Context, d delivery, p *stores.OutboxInsertParams) stores.OutboxInsertParams {
	row := *p
	if row.Consumer == "" {
		row.Consumer = d.consumer()
	}
	if row.EventID == "" {
		row.EventID = d.eventID()
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
