package ackgap

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ackgap/ackgap/internal/ident"
	"github.com/ackgap/ackgap/internal/inboxctx"
)

// Transition describes a guarded transition of one row: an UPDATE of the
// row whose KeyColumn equals Key that applies only when the row passes
// the guard, which is in the UPDATE's WHERE clause, so that two concurrent
// transitions of one row cannot both apply (never read-then-write).
//
// The guard is the state guard (StateColumn is one of From), when To is
// set, and every [Guard] in Guards (a column compared with a bound value:
// stock >= n, balance >= amount, version = v). The change is StateColumn
// set to To (when To is set), every [Assignment] in Set (a bound value, or
// the current value plus or minus one: stock = stock - n), and
// VersionColumn incremented. Identifiers are quoted; Key, From, To and
// every Guard and Set value are bound as parameters.
//
// Outcomes ([TransitionResult]): applied when the UPDATE changed the row;
// already applied when it did not and the row is in state To (To set and
// not one of From); refused otherwise (another state, a guard that does
// not hold, or no row).
type Transition struct {
	// Schema optionally qualifies Table ("" = the connection's default).
	Schema string
	// Table is the table name, unqualified. Required.
	Table string
	// KeyColumn is the primary-key column. Default "id".
	KeyColumn string
	// Key identifies the row. Required.
	Key any
	// StateColumn is the state column. Default "status"; unused when To
	// is "".
	StateColumn string
	// From lists the states the transition starts from. Required when To
	// is set; must be empty when To is "".
	From []string
	// To is the target state. "" means the transition sets no state: it
	// then needs Guards or Set, and is never already applied (the inbox
	// makes a second delivery harmless, not the row).
	To string
	// Guards are further conditions on the row, all of which must hold
	// for the transition to apply. Default none.
	Guards []Guard
	// Set lists further columns set by the same UPDATE when it applies.
	// Default none.
	Set []Assignment
	// VersionColumn, when set, is an integer column incremented by one each
	// time a transition applies (optimistic-concurrency version).
	VersionColumn string
}

// GuardOp is the comparison of a [Guard]: one of "=", "<>", "<", "<=",
// ">", ">=" (the SQL operators, with SQL's NULL rules: a NULL column
// fails every guard).
type GuardOp string

// Guard operators.
const (
	GuardEqual          GuardOp = "="
	GuardNotEqual       GuardOp = "<>"
	GuardLess           GuardOp = "<"
	GuardLessOrEqual    GuardOp = "<="
	GuardGreater        GuardOp = ">"
	GuardGreaterOrEqual GuardOp = ">="
)

// Guard is one condition of a [Transition]: Column Op Value, in the
// UPDATE's WHERE clause, with Column quoted and Value bound ("stock" >=
// $3).
type Guard struct {
	Column string
	Op     GuardOp
	Value  any
}

// SetOp is how an [Assignment] sets its column.
type SetOp string

// Assignment operators.
const (
	// SetValue (the zero value) sets the column to Value.
	SetValue SetOp = ""
	// SetAdd sets the column to its current value plus Value.
	SetAdd SetOp = "+"
	// SetSubtract sets the column to its current value minus Value.
	SetSubtract SetOp = "-"
)

// Assignment sets Column in a guarded transition: to Value (Op SetValue,
// the default), or to its current value plus or minus Value (SetAdd,
// SetSubtract: "stock" = "stock" - $4). Column is quoted as an identifier;
// Value is bound as a parameter.
type Assignment struct {
	Column string
	Value  any
	Op     SetOp
}

// TransitionOutcome says what a guarded transition did.
type TransitionOutcome string

const (
	// TransitionApplied: the row passed the guard and was changed.
	TransitionApplied TransitionOutcome = "applied"
	// TransitionAlreadyApplied: the row was already in To and To is not one
	// of From; nothing was written.
	TransitionAlreadyApplied TransitionOutcome = "already_applied"
	// TransitionRefused: the row does not pass the guard (a state the
	// transition does not start from, a Guard that does not hold), or there
	// is no row; nothing was written.
	TransitionRefused TransitionOutcome = "refused"
)

// TransitionResult is the outcome of a guarded transition.
type TransitionResult struct {
	Outcome TransitionOutcome
	// Found is false when no row has the key (Outcome is then Refused).
	Found bool
	// Previous is the state the row was in: for a transition that did not
	// apply, the state the guard found ("" when not Found or To is "");
	// for one that applied, From when From has one state, else "" (the
	// UPDATE does not return the old value).
	Previous string
}

// OutboxEntry is an outbox row to write in the message's transaction
// ([AddOutbox], the rows of [ApplyTransition]); the relay (package outbox)
// carries it out after the commit.
type OutboxEntry struct {
	// Kind names the effect that carries the row out ("charge",
	// "email.receipt"). Required.
	Kind string
	// IdempotencyKey is unique per outbox and derived from the business
	// event ("charge:<order id>"), so every retry of the effect carries the
	// same key. Required, at most IdempotencyKeyMaxBytes (255) bytes.
	IdempotencyKey string
	// Payload is the effect's body, at most OutboxPayloadMaxBytes (1 MiB).
	Payload []byte
	// Headers travel with the row to the effect (trace context, content
	// type). May be nil.
	Headers map[string]string
	// AvailableAt is the earliest time the relay may carry the row out;
	// zero means Now. Until then operators see the row as held (never
	// tried, not due yet), as they see rows held for direct dispatch:
	// stores.OutboxRow.Held.
	AvailableAt time.Time
	// Consumer and EventID record which message wrote the row; AddOutbox
	// and ApplyTransition fill them in when empty.
	Consumer string
	EventID  string
	// Now is the row's created_at; zero means the store's clock.
	Now time.Time
}

// IdempotencyKeyMaxBytes is the longest idempotency key an outbox accepts.
const IdempotencyKeyMaxBytes = 255

// OutboxPayloadMaxBytes is the largest outbox row payload, in bytes
// (1 MiB): the largest message Kafka (message.max.bytes' default) and SQS
// accept, so a row over it could never be published by the relay; keep
// large documents elsewhere and put their reference in the payload.
const OutboxPayloadMaxBytes = 1 << 20

// WithDefaults returns a copy of t with KeyColumn "id" and StateColumn
// "status" where empty.
func (t Transition) WithDefaults() Transition {
	if t.KeyColumn == "" {
		t.KeyColumn = "id"
	}
	if t.StateColumn == "" {
		t.StateColumn = "status"
	}
	return t
}

// Validate returns every problem with t at once (errors.Join), wrapped as
// "invalid transition", or nil. Call it on the result of WithDefaults.
func (t Transition) Validate() error {
	var errs []error
	if t.Schema != "" {
		errs = append(errs, ident.Valid("Schema", t.Schema))
	}
	errs = append(errs,
		ident.Valid("Table", t.Table),
		ident.Valid("KeyColumn", t.KeyColumn),
		ident.Valid("StateColumn", t.StateColumn))
	if t.VersionColumn != "" {
		errs = append(errs, ident.Valid("VersionColumn", t.VersionColumn))
	}
	if t.Key == nil {
		errs = append(errs, errors.New("Key is nil"))
	}
	switch {
	case t.To != "" && len(t.From) == 0:
		errs = append(errs, errors.New("From is empty: a guarded transition needs the states it starts from"))
	case t.To == "" && len(t.From) > 0:
		errs = append(errs, errors.New("To is empty but From is set: a state guard needs the state it moves to"))
	case t.To == "" && len(t.Guards) == 0:
		errs = append(errs, errors.New("To is empty and Guards is empty: a guarded transition needs a guard"))
	case t.To == "" && len(t.Set) == 0 && t.VersionColumn == "":
		errs = append(errs, errors.New("To is empty and Set is empty: the transition changes nothing"))
	}
	for i, g := range t.Guards {
		errs = append(errs, ident.Valid(fmt.Sprintf("Guards[%d].Column", i), g.Column))
		switch g.Op {
		case GuardEqual, GuardNotEqual, GuardLess, GuardLessOrEqual, GuardGreater, GuardGreaterOrEqual:
		default:
			errs = append(errs, fmt.Errorf("Guards[%d].Op %q is not one of = <> < <= > >=", i, g.Op))
		}
		if g.Value == nil {
			errs = append(errs, fmt.Errorf("Guards[%d].Value is nil: compare with a value (NULL fails every guard)", i))
		}
	}
	for i, a := range t.Set {
		errs = append(errs, ident.Valid(fmt.Sprintf("Set[%d].Column", i), a.Column))
		switch a.Op {
		case SetValue:
		case SetAdd, SetSubtract:
			if a.Value == nil {
				errs = append(errs, fmt.Errorf("Set[%d].Value is nil: %q needs an amount", i, a.Op))
			}
		default:
			errs = append(errs, fmt.Errorf("Set[%d].Op %q is not one of \"\" + -", i, a.Op))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid transition: %w", err)
	}
	return nil
}

// Applied reports whether this call changed the row. Side effects that
// must happen once per state change (counters, outbox rows keyed by
// something other than the row) belong behind it: an already-applied
// transition was made by another event, which already did them.
func (r *TransitionResult) Applied() bool { return r.Outcome == TransitionApplied }

// Err returns nil when the transition applied or was already applied, and
// for a refused one a permanent error (reason ReasonTransitionRefused)
// wrapping ErrTransitionRefused: returned from a handler, it rolls the
// transaction back and sends the message to the dead-letter topic, from
// where it can be redriven once the row passes the guard.
func (r *TransitionResult) Err() error {
	if r.Outcome != TransitionRefused {
		return nil
	}
	if !r.Found {
		return Permanent(ReasonTransitionRefused, fmt.Errorf("%w: no such row", ErrTransitionRefused))
	}
	if r.Previous == "" {
		return Permanent(ReasonTransitionRefused, fmt.Errorf("%w: the row does not pass the guard", ErrTransitionRefused))
	}
	return Permanent(ReasonTransitionRefused, fmt.Errorf("%w: row is in state %q", ErrTransitionRefused, r.Previous))
}

// Validate returns every problem with e at once (errors.Join), wrapped as
// "invalid outbox row", or nil.
func (e *OutboxEntry) Validate() error {
	var errs []error
	if e.Kind == "" {
		errs = append(errs, errors.New("Kind is empty"))
	}
	switch {
	case e.IdempotencyKey == "":
		errs = append(errs, errors.New("IdempotencyKey is empty"))
	case len(e.IdempotencyKey) > IdempotencyKeyMaxBytes:
		errs = append(errs, fmt.Errorf("IdempotencyKey is %d bytes, over the limit of %d", len(e.IdempotencyKey), IdempotencyKeyMaxBytes))
	}
	if len(e.Payload) > OutboxPayloadMaxBytes {
		errs = append(errs, fmt.Errorf("Payload is %d bytes, over the limit of %d", len(e.Payload), OutboxPayloadMaxBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid outbox row: %w", err)
	}
	return nil
}

// txOps is what the inbox middleware (and package batch) put in a
// message's context for the helpers below: the message's transaction
// bound to its store, consumer and event id. It is implemented by package
// middleware.
type txOps interface {
	// AddOutbox validates, fills in and adds e to the transaction.
	AddOutbox(ctx context.Context, e *OutboxEntry) error
	// ApplyTransition validates t and rows and holds them for the
	// transaction; resolve returns the outcome (see [PendingTransition]).
	ApplyTransition(ctx context.Context, t *Transition, rows []*OutboxEntry) (resolve func(context.Context) (*TransitionResult, error), err error)
}

// manyOps is the part of txOps for AddOutboxMany.
type manyOps interface {
	// AddOutboxMany validates, fills in and adds rows to the transaction.
	AddOutboxMany(ctx context.Context, rows []OutboxEntry) error
}

func opsFromContext(ctx context.Context) (txOps, bool) {
	ops, ok := inboxctx.Ops(ctx).(txOps)
	return ops, ok
}

// AddOutbox adds an outbox row to the message's transaction (ctx is the
// message's context, as the inbox middleware or package batch set it),
// recording the consumer and event id that wrote it when e leaves them
// empty, and the delivery's traceparent in the row's headers when the
// message is traced (package telemetry) and e sets none.
//
// A store may write the row at once (sqlitestore) or with the
// transaction's next statement or its commit (pgxstore: in the same round
// trip, costing none of its own). A row with the same idempotency key and
// payload as a stored one is a duplicate and writes nothing; the same key
// with another payload is a permanent error wrapping ErrIdempotencyConflict
// (reason ReasonIdempotencyConflict), from this call, the handler's next
// statement or the commit, which then fails and rolls everything back: the
// message is dead-lettered either way. It returns ErrNoTransaction outside
// the inbox middleware, and e's validation errors ([OutboxEntry.Validate])
// at once as a permanent error (reason ReasonInvalidOutboxRow): returned
// from the handler, the message is dead-lettered without retries.
func AddOutbox(ctx context.Context, e *OutboxEntry) error {
	ops, ok := opsFromContext(ctx)
	if !ok {
		return ErrNoTransaction
	}
	return ops.AddOutbox(ctx, e)
}

// AddOutboxMany adds rows to the transaction of ctx. In a batch handler
// (package batch's BatchHandler, whose ctx carries the batch's
// transaction) it writes them in one statement
// (stores.Store.InsertOutboxManyTx), recording the batch's consumer
// where a row leaves Consumer empty; EventID is the caller's to set, since
// a batch holds many events. In a message handler it adds each row as
// [AddOutbox] does. Errors are AddOutbox's: an invalid row is a permanent
// error (reason ReasonInvalidOutboxRow) and nothing is added; a key that
// exists with another payload is a permanent error wrapping
// ErrIdempotencyConflict; ErrNoTransaction outside the inbox middleware
// and package batch. Rows may be empty.
func AddOutboxMany(ctx context.Context, rows []OutboxEntry) error {
	switch ops := inboxctx.Ops(ctx).(type) {
	case manyOps:
		return ops.AddOutboxMany(ctx, rows)
	case txOps:
		for i := range rows {
			if err := ops.AddOutbox(ctx, &rows[i]); err != nil {
				return err
			}
		}
		return nil
	default:
		return ErrNoTransaction
	}
}

// ApplyTransition applies the guarded transition t in the message's
// transaction (ctx is the message's context) and, only if it applies,
// adds the outbox rows then (filled in like [AddOutbox]): the common shape
// of a handler that changes one row and records the effects of the change.
// It validates t and the rows at once (an invalid row is a permanent
// error, reason ReasonInvalidOutboxRow, as for [AddOutbox]), and returns
// ErrNoTransaction outside the inbox middleware (or package batch).
//
// The handler reads the outcome when it needs it, with
// [PendingTransition.Result]; until then the transition is held back. What
// the outcome does:
//
//   - applied: the change and then are written;
//   - already applied: nothing is written, and the message is acked;
//   - refused: nothing is written. When the handler read the result it
//     decides (return result.Err() to dead-letter the message, or nil to
//     ack it); when it did not, the commit fails with a permanent error
//     wrapping ErrTransitionRefused (reason ReasonTransitionRefused),
//     everything is rolled back and the message is dead-lettered.
//
// A transition the handler does not read runs when the handler returned
// nil, before the commit, on every store: after the handler's own
// statements and the rows it added with AddOutbox (read the result first
// when your SQL must see the change). On PostgreSQL (pgxstore) it is then
// one statement with the inbox insert and its rows, sent with the COMMIT,
// so a handler that does nothing else costs one round trip; reading the
// result costs one round trip more. A row whose key exists with another
// payload is a permanent ErrIdempotencyConflict.
func ApplyTransition(ctx context.Context, t *Transition, then ...*OutboxEntry) (*PendingTransition, error) {
	ops, ok := opsFromContext(ctx)
	if !ok {
		return nil, ErrNoTransaction
	}
	resolve, err := ops.ApplyTransition(ctx, t, then)
	if err != nil {
		return nil, err
	}
	return &PendingTransition{resolve: resolve}, nil
}

// PendingTransition is a guarded transition [ApplyTransition] accepted.
// It is bound to the message's transaction and, like it, not safe for
// concurrent use.
type PendingTransition struct {
	resolve func(context.Context) (*TransitionResult, error)
}

// Result returns the transition's outcome, sending it first if it is held
// back (and the transitions held before it, in order; on PostgreSQL with
// the transaction's BEGIN and inbox insert, in one round trip), then adds
// its rows if it applied. Reading it makes a refusal the handler's
// decision (see [ApplyTransition]). An error means the outcome is unknown
// (the database failed, or the message is a duplicate: ErrDuplicate):
// return it.
func (p *PendingTransition) Result(ctx context.Context) (*TransitionResult, error) {
	return p.resolve(ctx)
}
