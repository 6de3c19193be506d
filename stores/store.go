package stores

import (
	"context"
	"time"

	"github.com/ackgap/ackgap"
)

// Store is the handler path of the contract: what the inbox middleware,
// the router and the batched mode (package batch) need to run a message's
// transaction. TTx is the driver's own transaction type (pgx.Tx, *sql.Tx):
// handlers receive it as-is, without type assertions. The outbox relay's
// path is [OutboxStore], the operator's [Operator]; a complete store
// implements all three (pgxstore, sqlitestore, mysqlstore do).
//
// A store may pipeline (send the inbox insert with the handler's first
// statement, hold outbox rows and guarded transitions back until the next
// statement or the commit, saving round trips: pgxstore) or not (do each
// at once: sqlitestore); its callers cannot tell, because the contract has
// one method per operation and an eager store resolves at once
// (stores/storekit has the helpers for that).
//
// The batched mode runs many messages in one transaction with a savepoint
// each: BeginInboxMany inserts the inbox rows of a whole batch with one
// statement, savepoints undo one message without the others,
// DeleteInboxTx removes the inbox rows of failed messages again, and
// InsertOutboxManyTx writes many outbox rows at a time. One transaction is
// used by one goroutine at a time.
//
// Implementations are safe for concurrent use. Every method takes ctx first
// and honours its cancellation; errors that mean the database is
// unreachable wrap ackgap.ErrStoreUnavailable.
type Store[TTx any] interface {
	// BeginInboxDeferred begins a transaction whose first write inserts
	// the inbox row (p.Consumer, p.EventID), for a message about to be
	// handled. The store may send the BEGIN and the insert with the first
	// statement that goes through the transaction instead of ahead of it
	// (pgxstore: one pipelined round trip), or resolve at once (sqlitestore,
	// mysqlstore: BEGIN and INSERT now; when the row already exists the
	// transaction is rolled back and the result has Duplicate set and a
	// zero Tx). Concurrent deliveries of one key block in the database
	// until the first transaction ends; exactly one of them applies.
	// Otherwise Tx is the transaction, and when the insert is still
	// pending the dedupe check is still the insert under the unique
	// constraint (docs/design.md invariant 2): for a duplicate, the first
	// statement that carried it fails with ackgap.ErrDuplicate and the
	// transaction has been rolled back (the statement's own work undone);
	// every later statement fails too. InboxVerdictTx gives the verdict
	// at any point. Release Tx with CommitTx or RollbackTx.
	BeginInboxDeferred(ctx context.Context, p *BeginInboxParams) (*BeginInboxResult[TTx], error)

	// InboxVerdictTx returns whether the inbox insert of tx (from
	// BeginInboxDeferred) found the row already there, sending a pending
	// BEGIN and insert first if no statement carried them yet. For a
	// duplicate the result's Tx is zero and tx is over (rolled back, its
	// connection released); otherwise Tx is tx. A store that resolved at
	// once returns a result with Tx tx. An error means the outcome is
	// unknown: roll tx back.
	InboxVerdictTx(ctx context.Context, tx TTx) (*BeginInboxResult[TTx], error)

	// CommitTx commits tx. An error means the outcome is unknown to the
	// caller: the message must not be acked, and its redelivery finds the
	// inbox row if the commit did happen.
	CommitTx(ctx context.Context, tx TTx) error

	// RollbackTx rolls tx back. Rolling back a transaction that already
	// ended returns nil.
	RollbackTx(ctx context.Context, tx TTx) error

	// TransitionIfStateTx applies a guarded transition in tx: one UPDATE
	// whose WHERE clause holds the guard. See [ackgap.Transition].
	TransitionIfStateTx(ctx context.Context, tx TTx, p *ackgap.Transition) (*ackgap.TransitionResult, error)

	// QueueTransitionTx validates p and adds it to tx: a store may hold it
	// back and send it as one statement with the transaction's next
	// statement or its commit (pgxstore), or run it at once
	// (storekit.QueueTransitionNow). When it runs: if the transition
	// applies, the rows are inserted (deduplicated by idempotency key like
	// QueueOutboxTx); if it was already applied, nothing is written; if it
	// is refused, the call (or the statement that carries it, or CommitTx,
	// which then rolls back) fails with the error of ackgap.TransitionResult.Err
	// (permanent, ackgap.ErrTransitionRefused); a row whose key exists with
	// another payload fails it with ackgap.ErrIdempotencyConflict
	// (permanent). The caller learns nothing else: handlers that read the
	// outcome use TransitionIfStateTx.
	QueueTransitionTx(ctx context.Context, tx TTx, p *QueueTransitionParams) error

	// QueueOutboxTx adds the outbox row p to tx (ackgap.AddOutbox calls
	// it). A store may write it later: with the next statement sent
	// through tx, or with the commit (pgxstore); an eager store inserts it
	// at once. It validates p at once (ackgap.OutboxEntry.Validate). The caller
	// learns neither the row's id nor whether it was a duplicate (a row
	// with the same idempotency key and payload is still a duplicate, and
	// nothing is written). The same key with another payload fails the
	// call, the statement that carries the insert, or CommitTx, with
	// ackgap.ErrIdempotencyConflict (permanent): after a failed statement
	// the transaction can only be rolled back, and a failed CommitTx has
	// rolled it back, inbox row included. A rollback discards queued rows.
	QueueOutboxTx(ctx context.Context, tx TTx, p *ackgap.OutboxEntry) error

	// BeginInboxMany begins a transaction and inserts the inbox rows
	// (p.Consumer, p.Rows[i].EventID) in it as its first write, with one
	// statement for all rows (INSERT ... ON CONFLICT DO NOTHING): the
	// dedupe check is the insert under the unique constraint (docs/design.md
	// invariant 2). Rows that already existed are reported as duplicates,
	// with a payload mismatch when both hashes are set and differ; reading
	// their hashes takes a second statement only when there are
	// duplicates. A concurrent transaction holding one of the keys makes
	// the insert wait until it ends. With p.Savepoint set, the savepoint
	// is taken after the insert, in the same round trip where the store
	// can. Event ids must be distinct within p.Rows (an error otherwise);
	// no rows begins the transaction only. On error no transaction is left
	// open. End the transaction with CommitTx or RollbackTx;
	// TransitionIfStateTx, QueueOutboxTx and InsertOutboxManyTx work in it.
	BeginInboxMany(ctx context.Context, p *BeginInboxManyParams) (*BeginInboxManyResult[TTx], error)

	// SavepointTx sets a savepoint named name in tx. A name used again
	// shadows the earlier savepoint until it is released.
	SavepointTx(ctx context.Context, tx TTx, name string) error

	// RollbackToSavepointTx undoes everything tx did since the savepoint
	// name was set, and keeps the savepoint. It also recovers a
	// transaction that a failed statement aborted (PostgreSQL) since then.
	RollbackToSavepointTx(ctx context.Context, tx TTx, name string) error

	// ReleaseSavepointTx ends the savepoint name, keeping its changes. It
	// fails when a statement since the savepoint aborted the transaction
	// (PostgreSQL): then roll back to the savepoint.
	ReleaseSavepointTx(ctx context.Context, tx TTx, name string) error

	// DeleteInboxTx deletes the inbox rows (p.Consumer, p.EventIDs[i]) in
	// tx, with one statement: the rows of messages whose handler failed
	// after BeginInboxMany inserted them, so that their redelivery applies
	// them.
	DeleteInboxTx(ctx context.Context, tx TTx, p *DeleteInboxParams) (*DeleteInboxResult, error)

	// InsertOutboxManyTx adds outbox rows in tx with one statement (a
	// second only when some keys exist), each row validated as
	// QueueOutboxTx validates it. A row whose idempotency key exists with
	// the same payload, in the table or earlier in p.Rows, is a duplicate
	// and writes nothing; the same key with another payload returns
	// storekit.IdempotencyConflict (permanent, ackgap.ErrIdempotencyConflict)
	// and the statement's rows are not kept: roll back (to a savepoint).
	InsertOutboxManyTx(ctx context.Context, tx TTx, p *OutboxInsertManyParams) (*OutboxInsertManyResult, error)

	// ClassifyError tells what a database error means, for errors that
	// reach ackgap without passing through a store method: the handler's
	// own statements on its transaction (pgx.Tx, *sql.Tx) return the
	// driver's errors as they are. The inbox middleware and the batch
	// processor pass a handler's error, and a commit's, through it. It
	// returns err itself when it is nil or not a database error the store
	// recognises (a store that knows no codes always does); an error
	// wrapping ackgap.ErrStoreUnavailable when the database is busy or
	// unreachable (the message is redelivered, never dead-lettered); a
	// permanent error with reason ackgap.ReasonInvalidData wrapping
	// ackgap.ErrInvalidData when the database refused the data
	// (dead-lettered without retries). The result still wraps err.
	// docs/errors.md lists the codes of each store and their class;
	// storekit.ClassifyError does the sorting for a store that lists them.
	ClassifyError(err error) error
}

// QueueTransitionParams are the input of [Store.QueueTransitionTx].
type QueueTransitionParams struct {
	// Transition is the guarded transition; see [ackgap.Transition].
	Transition ackgap.Transition
	// Outbox rows are written only when the transition applies. Each is
	// validated like a QueueOutboxTx row; two rows with one idempotency
	// key and one payload are written once, with another payload they are
	// an ackgap.ErrIdempotencyConflict at once.
	Outbox []ackgap.OutboxEntry
	// Ran, when set, is called once the transition's statement ran without
	// error (from QueueTransitionTx, the statement that carried it, or
	// CommitTx, before the COMMIT's outcome is known), with whether the
	// transition applied and so wrote Outbox. The inbox middleware uses it
	// to hand the rows of an applied transition to an outbox dispatcher
	// once the commit succeeded (middleware.InboxConfig.Dispatch). A store
	// that does not call it costs such rows their hold: a relay carries
	// them out when the hold lapses. Default nil.
	Ran func(applied bool)
}

// BeginInboxParams are the input of [Store.BeginInboxDeferred].
type BeginInboxParams struct {
	// Consumer is the consumer name that scopes the inbox row (docs/design.md
	// invariant 6): two consumers of one topic each process an event once.
	Consumer string
	// EventID is the producer-assigned event id.
	EventID string
	// PayloadHash is a digest of the payload (SHA-256, 32 bytes, from the
	// middleware), stored with the row so a reused event id with another
	// payload can be told from a true duplicate. May be nil.
	PayloadHash []byte
	// Now is the time recorded as the row's received_at; zero means the
	// store's clock.
	Now time.Time
	// TraceParent is the W3C traceparent of this delivery's span
	// (https://www.w3.org/TR/trace-context/, 55 bytes), stored with the row
	// so that a later copy's span can link to the delivery that applied
	// the event; "" when the delivery is not traced. Stores without a place
	// for it ignore it.
	TraceParent string
	// Progress, when not nil, is the partition's watermark as the broker
	// engine knew it when it handed out this copy; the store writes it in
	// the same transaction, just before the COMMIT, with an upsert that
	// never moves a stored watermark back (see [Progress]). Nil writes
	// nothing (brokers without offsets).
	Progress *Progress
}

// Progress is one partition's watermark as the broker engine knew it when
// it handed a message out (Kafka: the lowest offset of the partition not
// yet acked; every offset below it was acked, so its transaction committed
// earlier). Written inside the consumer's own transaction, it survives
// exactly as far as that transaction does: a promoted standby or a
// restored backup holds a prefix of the commit order, so a database that
// kept the row kept every transaction below its watermark too, and a
// consumer that starts from the stored watermark replays what the
// database lost (the inbox skips what it kept).
type Progress struct {
	// Topic and Partition locate the partition (Kafka topic, partition).
	Topic     string
	Partition int32
	// Watermark is the offset below which every record was acked; >= 0.
	Watermark int64
}

// ProgressRow is one stored progress row: the watermark consumer's
// transactions recorded for a partition, and when the last one did
// (pgxstore, sqlitestore and mysqlstore Store.Progress).
type ProgressRow struct {
	Consumer, Topic string
	Partition       int32
	Watermark       int64
	UpdatedAt       time.Time
}

// ProgressOf returns the progress row of the message whose context is
// ctx: its ackgap.Delivery's Destination, Partition and Watermark when the
// engine filled HasWatermark (Offset+1 when Watermark is the delivery's
// own Offset, as the row rides in the transaction that applies it), else
// nil.
func ProgressOf(ctx context.Context) *Progress {
	d, ok := ackgap.DeliveryFromContext(ctx)
	if !ok || !d.HasWatermark || d.Watermark < 0 {
		return nil
	}
	w := d.Watermark
	if d.HasOffset && w == d.Offset {
		// The transaction applies Offset itself: a database that kept it
		// holds every record up to and including Offset.
		w++
	}
	return &Progress{Topic: d.Destination, Partition: d.Partition, Watermark: w}
}

// MergeProgress returns ps with one entry per (topic, partition), the
// highest watermark of each, in first-seen order; a single upsert
// statement must not touch one row twice.
func MergeProgress(ps []Progress) []Progress {
	if len(ps) < 2 {
		return ps
	}
	type key struct {
		topic     string
		partition int32
	}
	at := make(map[key]int, len(ps))
	out := make([]Progress, 0, len(ps))
	for _, p := range ps {
		k := key{p.Topic, p.Partition}
		if i, ok := at[k]; ok {
			out[i].Watermark = max(out[i].Watermark, p.Watermark)
			continue
		}
		at[k] = len(out)
		out = append(out, p)
	}
	return out
}

// BeginInboxResult is the output of [Store.BeginInboxDeferred] and
// [Store.InboxVerdictTx].
type BeginInboxResult[TTx any] struct {
	// Tx is the open transaction holding the new inbox row; zero when
	// Duplicate is true.
	Tx TTx
	// Duplicate is true when the inbox row already existed: the event was
	// processed and committed before.
	Duplicate bool
	// PayloadMismatch is true for a duplicate whose stored payload hash is
	// set and differs from BeginInboxParams.PayloadHash.
	PayloadMismatch bool
	// TraceParent is, for a duplicate, the traceparent stored by the
	// delivery that applied the event ("" when it was not traced or the
	// store does not keep it).
	TraceParent string
}

// OutboxState is the life-cycle state of an outbox row.
type OutboxState string

// Outbox row states. A new row is pending; the relay moves it on.
const (
	OutboxPending OutboxState = "pending"
	OutboxClaimed OutboxState = "claimed"
	OutboxDone    OutboxState = "done"
	OutboxDead    OutboxState = "dead"
)

// OutboxRow is one outbox row as stored: the entry a handler added and
// what the relays did with it since. It is the one value of an outbox row
// from the store to the relay's effects (outbox.Effect), its reports and
// the operator's tools.
type OutboxRow struct {
	// ID is the row's id, assigned by the store in insert order.
	ID int64
	// OutboxEntry is the row as written (ackgap.AddOutbox): Kind,
	// IdempotencyKey, Payload (never nil when read back), Headers, Consumer
	// and EventID as given. Now is the row's created_at (see CreatedAt);
	// AvailableAt is its available_at now: when it was written, then moved
	// by each claim (to the lease's end) and each retry (to its due time).
	ackgap.OutboxEntry
	// State is the row's life-cycle state.
	State OutboxState
	// Attempts counts the claims of the row (and the recorded outcome of a
	// row held for direct dispatch); 0 for a row never tried.
	Attempts int
	// LastError is the error the last failed attempt kept; "" when none
	// failed (a done row keeps the error of an earlier failed attempt).
	LastError string
	// Claim is the claim [OutboxStore.ClaimOutbox] took on the row: set on
	// the rows it returns (Claim.ID is ID, Claim.Until is AvailableAt),
	// zero on rows read any other way. Settle the row with it.
	Claim OutboxClaim
}

// CreatedAt returns when the row was written (created_at): r.Now.
func (r OutboxRow) CreatedAt() time.Time { return r.Now }

// Held reports whether r is held at now: pending, never tried (Attempts
// 0) and not due before AvailableAt, which is after now. Such a row was
// written held for direct dispatch (outbox.Relay as
// middleware.InboxConfig.Dispatch): the relay of the writing process
// carries it out and records it by idempotency key, and if that process
// died, any relay claims it once the hold ends at AvailableAt. A row a
// handler added with a later ackgap.OutboxEntry.AvailableAt (a delayed
// effect) is held too: both are rows never tried and not due yet, and the
// stored columns do not tell them apart. A row waiting out a retry backoff
// has Attempts >= 1 and is not held.
func (r OutboxRow) Held(now time.Time) bool {
	return r.State == OutboxPending && r.Attempts == 0 && r.AvailableAt.After(now)
}

// OutboxListParams filter [OutboxStore.ListOutbox]. Zero fields do not
// filter.
type OutboxListParams struct {
	Kind  string
	State OutboxState
	// Limit caps the rows returned; 0 means 1000.
	Limit int
}

// OutboxListResult is the output of [OutboxStore.ListOutbox].
type OutboxListResult struct {
	Rows []OutboxRow
}

// PruneInboxParams are the input of [Operator.PruneInbox].
type PruneInboxParams struct {
	// Before: rows first received before this instant are deleted.
	// Required.
	Before time.Time
	// Consumer limits pruning to one consumer; "" prunes all.
	Consumer string
	// Limit caps the rows deleted by one call; 0 means 1000.
	Limit int
}

// PruneInboxResult is the output of [Operator.PruneInbox].
type PruneInboxResult struct {
	Deleted int64
}

// MigrateParams are the input of [Operator.Migrate].
type MigrateParams struct {
	// Down migrates down instead of up.
	Down bool
	// TargetVersion is the version to stop at; 0 means the newest going up
	// and none (all tables dropped) going down.
	TargetVersion int
}

// Migration is one numbered migration of a store's tables, rendered with
// the store's names (schema, table prefix): the SQL Migrate runs, for users
// who apply migrations with their own tool (goose, atlas, a DBA).
type Migration struct {
	// Version numbers migrations from 1, in the order they apply.
	Version int
	// Name is a short snake_case description ("inbox_outbox").
	Name string
	// UpSQL applies the migration; DownSQL reverts it (and drops its data).
	UpSQL, DownSQL string
}

// MigrateResult is the output of [Operator.Migrate].
type MigrateResult struct {
	// Applied lists the versions applied (up) or reverted (down), in order.
	Applied []int
	// Version is the version after the call.
	Version int
}

// OutboxListLimitDefault is the row cap of ListOutbox when Limit is 0.
const OutboxListLimitDefault = 1000

// PruneLimitDefault is the row cap of PruneInbox when Limit is 0.
const PruneLimitDefault = 1000
