package stores

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Operator is the operator path of the contract: what it takes to set a
// store up, keep it bounded, inspect and repair it without writing SQL.
// The ackgap command (cmd/ackgap), the console and package retention run
// on it. It includes [OutboxStore] (redrive, stats) and needs no
// transaction type, so one command serves every store. pgxstore,
// sqlitestore and mysqlstore implement it and pass its part of
// storetest.Run.
//
// Every method reads or writes outside any handler transaction; writes are
// guarded by the rows' state in their WHERE clause, so running one twice
// changes nothing the second time.
type Operator interface {
	OutboxStore

	// Migrate brings the store's tables to p.TargetVersion (0 with
	// p.Down for none; the newest when zero and not Down), recording each
	// version in the version table. A target newer than the store knows is
	// an error.
	Migrate(ctx context.Context, p *MigrateParams) (*MigrateResult, error)

	// PruneInbox deletes at most p.Limit inbox rows first received before
	// p.Before and returns how many it deleted; package retention runs it
	// on a schedule. Several callers at once are safe: rows another
	// caller is deleting are skipped, not waited for (SQLite: one writer
	// at a time, callers take turns). A zero Before is an error.
	PruneInbox(ctx context.Context, p *PruneInboxParams) (*PruneInboxResult, error)

	// MigrationStatus lists every migration the store knows with the time
	// it was applied, read from the version table (none applied when the
	// table does not exist yet).
	MigrationStatus(ctx context.Context, p *MigrationStatusParams) (*MigrationStatusResult, error)

	// Stats counts inbox rows per consumer and outbox rows per kind and
	// state. It scans the inbox table (an index-only scan on PostgreSQL
	// when the visibility map allows): run it from an operator's shell or a
	// scrape every few minutes, not per message.
	Stats(ctx context.Context, p *StatsParams) (*StatsResult, error)

	// LookupEvent returns the inbox rows of p.EventID (which consumers
	// applied it, and when) and the outbox rows those deliveries wrote.
	// The outbox has no index on event_id: the lookup scans it, so keep
	// done rows pruned.
	LookupEvent(ctx context.Context, p *LookupEventParams) (*LookupEventResult, error)

	// FindOutbox returns outbox rows matching every set filter of p,
	// ordered by id, at most p.Limit of them, starting after p.AfterID:
	// call it again with the last id to page through.
	FindOutbox(ctx context.Context, p *FindOutboxParams) (*FindOutboxResult, error)

	// DeleteOutboxIfState deletes the rows of p.IDs that are in one of
	// p.States (done or dead only) and returns how many it deleted. Rows
	// in any other state, or gone already, are left alone.
	DeleteOutboxIfState(ctx context.Context, p *DeleteOutboxParams) (*DeleteOutboxResult, error)
}

// Defaults and limits of the [Operator] methods.
const (
	// StatsWindowDefault is the window of StatsParams when zero: inbox rows
	// per minute are counted over the last hour.
	StatsWindowDefault = time.Hour
	// FindOutboxLimitDefault is the row cap of FindOutbox when Limit is 0.
	FindOutboxLimitDefault = 100
	// FindOutboxLimitMax is the largest Limit FindOutbox accepts.
	FindOutboxLimitMax = 10000
	// LookupEventLimit caps the outbox rows LookupEvent returns.
	LookupEventLimit = 1000
	// DeleteOutboxIDsMax is the most ids one DeleteOutboxIfState call takes.
	DeleteOutboxIDsMax = 10000
)

// MigrationStatusParams are the input of [Operator.MigrationStatus]. It has
// no fields yet; pass a zero value.
type MigrationStatusParams struct{}

// MigrationState is one migration and whether it was applied.
type MigrationState struct {
	// Version and Name are those of [Migration].
	Version int
	Name    string
	// Applied is true when the version table holds Version.
	Applied bool
	// AppliedAt is when it was applied; zero when not Applied.
	AppliedAt time.Time
}

// MigrationStatusResult is the output of [Operator.MigrationStatus].
type MigrationStatusResult struct {
	// Version is the newest applied version, 0 when none.
	Version int
	// Latest is the newest version the store knows.
	Latest int
	// Migrations lists every known migration, oldest first.
	Migrations []MigrationState
}

// Pending returns the migrations not applied yet, oldest first.
func (r *MigrationStatusResult) Pending() []MigrationState {
	var out []MigrationState
	for _, m := range r.Migrations {
		if !m.Applied {
			out = append(out, m)
		}
	}
	return out
}

// StatsParams are the input of [Operator.Stats].
type StatsParams struct {
	// Window is how far back inbox rows count as recent
	// (InboxConsumerStats.Recent). Default StatsWindowDefault (1 h).
	Window time.Duration
	// Now is the time the window ends and due rows are judged at; zero
	// means the store's clock.
	Now time.Time
}

// InboxConsumerStats describe one consumer's inbox rows.
type InboxConsumerStats struct {
	Consumer string
	// Rows counts the consumer's inbox rows.
	Rows int64
	// Oldest and Newest are the first and last received_at.
	Oldest, Newest time.Time
	// Recent counts rows received within the window before Now.
	Recent int64
}

// PerMinute returns Recent spread over window, in rows per minute.
func (s InboxConsumerStats) PerMinute(window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	return float64(s.Recent) / window.Minutes()
}

// RateWindow returns the span to spread Recent over for a rate that
// means something (pass it to PerMinute): window (the stats' Window,
// StatsWindowDefault by default), or the time from the consumer's oldest
// row to now when that is shorter (a consumer that started ten minutes
// ago is not averaged over an hour), and at least one minute. The
// console and "ackgap status" both use it, so they agree.
func (s InboxConsumerStats) RateWindow(window time.Duration, now time.Time) time.Duration {
	if !s.Oldest.IsZero() {
		window = min(window, now.Sub(s.Oldest))
	}
	return max(window, time.Minute)
}

// OutboxKindStats count one kind's outbox rows in one state.
type OutboxKindStats struct {
	Kind  string
	State OutboxState
	Rows  int64
	// OldestCreatedAt is the oldest created_at among these rows.
	OldestCreatedAt time.Time
	// Held counts, of pending rows, those held at Now ([OutboxRow.Held]:
	// never tried, due after Now); 0 for the other states.
	Held int64
	// Backoff counts, of pending rows, those waiting out a retry backoff
	// at Now (tried at least once, due after Now); 0 for the other states.
	// The other pending rows, Rows - Held - Backoff, are due.
	Backoff int64
}

// StatsResult is the output of [Operator.Stats].
type StatsResult struct {
	// Inbox has one entry per consumer, ordered by consumer.
	Inbox []InboxConsumerStats
	// Outbox has one entry per kind and state that has rows, ordered by
	// kind, then state.
	Outbox []OutboxKindStats
	// OldestDueAt is the available_at of the oldest pending or claimed row
	// due at Now (its age is how long the relays are behind); zero when
	// none is due. Held rows and rows waiting out a backoff are not due.
	OldestDueAt time.Time
	// Held counts the pending rows held at Now, over every kind (the sum
	// of OutboxKindStats.Held): rows written held for direct dispatch
	// that the relay of the writing process has not recorded yet, and
	// rows a handler added with a later AvailableAt, which the store
	// cannot tell apart (see [OutboxRow.Held]). After the writing process
	// died, they wait for their holds to end (a relay's Lease, 1 minute by
	// default), then any relay claims them.
	Held int64
	// HeldUntil is the earliest available_at of the Held rows: when the
	// first of them becomes due; zero when Held is 0.
	HeldUntil time.Time
	// Backoff counts the pending rows waiting out a retry backoff at Now,
	// over every kind (the sum of OutboxKindStats.Backoff).
	Backoff int64
	// Now is the time the stats were taken at (StatsParams.Now, or the
	// store's clock).
	Now time.Time
	// Window is the window Recent counts were taken over.
	Window time.Duration
}

// LookupEventParams are the input of [Operator.LookupEvent].
type LookupEventParams struct {
	// EventID is the producer-assigned event id. Required.
	EventID string
	// Consumer limits the lookup to one consumer; "" means every consumer.
	Consumer string
}

// InboxRow is one inbox row as stored.
type InboxRow struct {
	Consumer   string
	EventID    string
	ReceivedAt time.Time
	// PayloadHash is the SHA-256 of the payload the applying delivery
	// carried; nil when it was not recorded.
	PayloadHash []byte
	// TraceParent is the W3C traceparent of the applying delivery; "" when
	// it was not traced.
	TraceParent string
}

// LookupEventResult is the output of [Operator.LookupEvent].
type LookupEventResult struct {
	// Inbox holds one row per consumer that applied the event, ordered by
	// consumer; empty when none did (or its rows were pruned).
	Inbox []InboxRow
	// Outbox holds the rows the event's deliveries wrote, ordered by id,
	// at most LookupEventLimit.
	Outbox []OutboxRow
}

// FindOutboxParams filter [Operator.FindOutbox]. Zero fields do not filter.
type FindOutboxParams struct {
	// IDs limits the result to these rows.
	IDs []int64
	// States limits the result to rows in one of these states.
	States []OutboxState
	// Kind limits the result to one kind.
	Kind string
	// KeyPrefix limits the result to idempotency keys that start with it
	// (compared byte by byte, no pattern characters).
	KeyPrefix string
	// CreatedBefore limits the result to rows created before it.
	CreatedBefore time.Time
	// Held limits the result to rows held at Now ([OutboxRow.Held]):
	// pending, attempts 0, available_at after Now. With States set too,
	// a row must match both (held rows are pending).
	Held bool
	// Now is the time Held is judged at; zero means the store's clock.
	Now time.Time
	// AfterID returns rows with an id above it: the last id of the
	// previous page.
	AfterID int64
	// Limit caps the rows returned; 0 means FindOutboxLimitDefault (100),
	// at most FindOutboxLimitMax (10000).
	Limit int
}

// Validate returns every problem with p at once (errors.Join), or nil:
// Limit out of range, an unknown state, a Kind or KeyPrefix that is not
// UTF-8 text without NUL bytes (no row can match it).
func (p *FindOutboxParams) Validate() error {
	var errs []error
	if p.Limit < 0 || p.Limit > FindOutboxLimitMax {
		errs = append(errs, fmt.Errorf("Limit is %d, must be in [0, %d]", p.Limit, FindOutboxLimitMax))
	}
	for i, s := range p.States {
		if !s.Valid() {
			errs = append(errs, fmt.Errorf("States[%d] is %q, must be pending, claimed, done or dead", i, s))
		}
	}
	if !validText(p.Kind) {
		errs = append(errs, fmt.Errorf("Kind %+q is not UTF-8 text without NUL bytes", p.Kind))
	}
	if !validText(p.KeyPrefix) {
		errs = append(errs, fmt.Errorf("KeyPrefix %+q is not UTF-8 text without NUL bytes", p.KeyPrefix))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid outbox filter: %w", err)
	}
	return nil
}

// LimitOrDefault returns Limit, or FindOutboxLimitDefault when it is 0.
func (p *FindOutboxParams) LimitOrDefault() int {
	if p.Limit == 0 {
		return FindOutboxLimitDefault
	}
	return p.Limit
}

// FindOutboxResult is the output of [Operator.FindOutbox].
type FindOutboxResult struct {
	// Rows match the filter, ordered by id.
	Rows []OutboxRow
}

// DeleteOutboxParams are the input of [Operator.DeleteOutboxIfState].
type DeleteOutboxParams struct {
	// IDs are the rows to delete. Required, at most DeleteOutboxIDsMax.
	IDs []int64
	// States is the guard: only rows in one of them are deleted. Required;
	// only OutboxDone and OutboxDead are allowed (a pending or claimed row
	// is an effect not yet carried out).
	States []OutboxState
}

// Validate returns every problem with p at once (errors.Join), or nil.
func (p *DeleteOutboxParams) Validate() error {
	var errs []error
	if len(p.IDs) == 0 || len(p.IDs) > DeleteOutboxIDsMax {
		errs = append(errs, fmt.Errorf("IDs has %d ids, must have 1 to %d", len(p.IDs), DeleteOutboxIDsMax))
	}
	if len(p.States) == 0 {
		errs = append(errs, errors.New("States is empty"))
	}
	for i, s := range p.States {
		if s != OutboxDone && s != OutboxDead {
			errs = append(errs, fmt.Errorf("States[%d] is %q: only done and dead rows can be deleted", i, s))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid outbox delete: %w", err)
	}
	return nil
}

// DeleteOutboxResult is the output of [Operator.DeleteOutboxIfState].
type DeleteOutboxResult struct {
	// Deleted is the number of rows deleted.
	Deleted int64
}

// Valid reports whether s is one of the four outbox states.
func (s OutboxState) Valid() bool {
	switch s {
	case OutboxPending, OutboxClaimed, OutboxDone, OutboxDead:
		return true
	}
	return false
}

// StateStrings returns states as strings, for a driver's text array.
func StateStrings(states []OutboxState) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}

// validText reports whether s is valid UTF-8 without NUL bytes, as every
// text column of the outbox holds (PostgreSQL refuses anything else, even
// in a query's filter, with SQLSTATE 22021).
func validText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
