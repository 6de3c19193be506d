package stores

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// OutboxStore is the outbox path of the contract: what an outbox relay
// (package outbox) needs from a store: claim due rows under a lease,
// record each row's outcome behind a guard, be woken when rows are added,
// and the operations around them (list, redrive, prune, stats). It needs
// no transaction type, so one relay serves every store. pgxstore,
// sqlitestore and mysqlstore implement it, and storetest.Run runs its
// conformance suite when a store implements it.
//
// The life of a row: pending -> claimed (ClaimOutbox) -> done, back to
// pending (a retry) or dead, for one or many rows at once
// (SettleOutboxIfClaimedOrHeld, which also records rows held for direct
// dispatch, never claimed); dead -> pending (RedriveOutboxIfDead);
// done rows are deleted after a retention (PruneOutboxIfDone). A claimed
// row whose lease lapsed is due again: a relay that crashed mid-effect
// loses it to the next claimer, which repeats the effect with the same
// idempotency key (docs/design.md invariant 7).
//
// Every method is one short statement (or one short transaction) and
// holds nothing open between calls: a relay calls its effects between
// ClaimOutbox and the call that records the outcome, outside any
// transaction.
// Implementations are safe for concurrent use, by many relays in one or
// many processes.
type OutboxStore interface {
	// ListOutbox returns outbox rows ordered by ID, filtered by p, at most
	// p.Limit (default OutboxListLimitDefault, 1000).
	ListOutbox(ctx context.Context, p *OutboxListParams) (*OutboxListResult, error)

	// ListenOutbox tells the caller at once that a transaction added
	// outbox rows (pgxstore: LISTEN/NOTIFY). It listens until ctx ends
	// (then it returns nil) or the listening connection fails (then it
	// returns the error; call it again). It calls p.Notify once listening
	// has begun, so that rows committed before are not missed, and then
	// after each commit that inserted outbox rows. A notification is only
	// a hint to claim now: a relay must still poll, since a notification
	// can be lost while no one is listening. A store that cannot listen
	// (sqlitestore, mysqlstore) returns an error wrapping
	// errors.ErrUnsupported at once, without calling p.Notify: its relays
	// poll only.
	ListenOutbox(ctx context.Context, p *OutboxListenParams) error

	// ClaimOutbox claims at most p.Limit due rows, oldest due first
	// (available_at, then id): rows whose state is pending, or claimed with
	// a lapsed lease, and whose available_at is not after now. Each claimed
	// row gets state claimed, attempts + 1, a new claim token, and
	// claimed_until = available_at = now + p.Lease (so one index range on
	// available_at finds pending and lapsed rows alike). Two concurrent
	// claimers never get the same row (PostgreSQL: FOR UPDATE SKIP LOCKED;
	// SQLite: one writer, BEGIN IMMEDIATE). The result's rows carry the
	// values after the claim, ordered by id.
	ClaimOutbox(ctx context.Context, p *OutboxClaimParams) (*OutboxClaimResult, error)

	// SettleOutboxIfClaimedOrHeld records the outcome of each row of
	// p.Rows, behind the row's own guard in the statement's WHERE clause:
	//
	//   - a claimed row (ClaimOutbox; ID and ClaimToken) changes only if it
	//     is still claimed under ClaimToken. Its lease may have lapsed and
	//     another claimer taken it, or an operator moved it: then it is
	//     left alone.
	//   - a held row (carried out by the relay of the writing process right
	//     after its commit, without a claim: outbox direct dispatch,
	//     middleware.InboxConfig.Dispatch; IdempotencyKey and HeldUntil)
	//     was inserted pending, with attempts 0 and available_at at its
	//     hold's end, so no relay claims it before then. It changes only if
	//     it is still pending, with attempts 0 and available_at equal to
	//     HeldUntil (to the microsecond), and then also gets attempts 1. A
	//     row claimed by a relay after its hold lapsed, or one that already
	//     existed under the key when the insert was a duplicate, fails the
	//     guard and is left alone.
	//
	// A row that passes gets its new state: done (done_at = now), pending
	// (due at now + Delay, last_error = LastError; attempts unchanged:
	// ClaimOutbox counts them) or dead (last_error = LastError; never
	// claimed again until RedriveOutboxIfDead). The result says per row
	// whether it was written and its id. The claimed rows go in one
	// statement (one commit), the held rows in another, so the outcomes of
	// effects that finish together cost one statement; the outbox relay
	// records every outcome with it. It returns an error, and writes
	// nothing, when p is invalid ([OutboxSettleParams.Validate]); an error
	// of a statement leaves the rows of the other statement as it wrote
	// them.
	SettleOutboxIfClaimedOrHeld(ctx context.Context, p *OutboxSettleParams) (*OutboxSettleResult, error)

	// RedriveOutboxIfDead sets dead rows (those of p.IDs, or every dead row
	// of p.Kind) back to pending, due now, with attempts reset to 0, at
	// most p.Limit of them. last_error is kept. Rows that are not dead are
	// left alone.
	RedriveOutboxIfDead(ctx context.Context, p *OutboxRedriveParams) (*OutboxRedriveResult, error)

	// PruneOutboxIfDone deletes at most p.Limit done rows whose done_at is
	// before p.Before. Rows in any other state are never deleted. Several
	// callers at once are safe.
	PruneOutboxIfDone(ctx context.Context, p *OutboxPruneParams) (*OutboxPruneResult, error)

	// OutboxStats counts rows by state (done rows are not counted) and
	// finds the oldest row not yet carried out, for metrics and alerts.
	OutboxStats(ctx context.Context, p *OutboxStatsParams) (*OutboxStatsResult, error)
}

// Defaults and limits of the outbox relay methods.
const (
	// OutboxClaimLimitDefault is the row cap of ClaimOutbox when Limit is 0.
	OutboxClaimLimitDefault = 10
	// OutboxClaimLimitMax is the largest Limit ClaimOutbox accepts.
	OutboxClaimLimitMax = 1000
	// OutboxRedriveLimitDefault is the row cap of RedriveOutboxIfDead when
	// Limit is 0.
	OutboxRedriveLimitDefault = 1000
	// OutboxPruneLimitDefault is the row cap of PruneOutboxIfDone when
	// Limit is 0.
	OutboxPruneLimitDefault = 1000
)

// OutboxClaimParams are the input of [OutboxStore.ClaimOutbox].
type OutboxClaimParams struct {
	// Limit caps the rows claimed; 0 means OutboxClaimLimitDefault (10), at
	// most OutboxClaimLimitMax (1000).
	Limit int
	// Lease is how long the claim holds the row: until now + Lease no other
	// claimer takes it. It must cover the effect call and recording its
	// outcome. Required, positive; stored with microsecond precision.
	Lease time.Duration
	// Kinds, when not empty, limits the claim to rows of these kinds (the
	// kinds a relay has effects for). Empty claims every kind.
	Kinds []string
	// Now is the claim time; zero means the store's clock (PostgreSQL's
	// now(), so that relays on hosts with skewed clocks agree on leases).
	Now time.Time
}

// Validate returns every problem with p at once (errors.Join), or nil.
func (p *OutboxClaimParams) Validate() error {
	var errs []error
	if p.Limit < 0 || p.Limit > OutboxClaimLimitMax {
		errs = append(errs, fmt.Errorf("Limit is %d, must be in [0, %d]", p.Limit, OutboxClaimLimitMax))
	}
	if p.Lease < time.Microsecond {
		errs = append(errs, fmt.Errorf("Lease is %s, must be at least 1µs", p.Lease))
	}
	for i, k := range p.Kinds {
		if k == "" {
			errs = append(errs, fmt.Errorf("Kinds[%d] is empty", i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid outbox claim: %w", err)
	}
	return nil
}

// LimitOrDefault returns Limit, or OutboxClaimLimitDefault when it is 0.
func (p *OutboxClaimParams) LimitOrDefault() int {
	if p.Limit == 0 {
		return OutboxClaimLimitDefault
	}
	return p.Limit
}

// OutboxClaim identifies one claim of one row: the guard with which
// [OutboxStore.SettleOutboxIfClaimedOrHeld] records the row's outcome.
type OutboxClaim struct {
	// ID is the row's id.
	ID int64
	// Token is new for every claim (random, 32 hex digits): a claimer whose
	// lease lapsed and whose row was claimed again holds a stale token, and
	// its settle changes nothing.
	Token string
	// Until is when the lease ends (claimed_until).
	Until time.Time
}

// OutboxClaimResult is the output of [OutboxStore.ClaimOutbox].
type OutboxClaimResult struct {
	// Rows are the claimed rows, ordered by id, with their values after
	// the claim (State claimed, Attempts counting this claim, AvailableAt
	// equal to Claim.Until) and their Claim set; empty when none was due.
	Rows []OutboxRow
}

// OutboxRedriveParams are the input of [OutboxStore.RedriveOutboxIfDead].
// Zero fields do not filter.
type OutboxRedriveParams struct {
	// IDs limits the redrive to these rows; empty means every dead row (of
	// Kind).
	IDs []int64
	// Kind limits the redrive to one kind.
	Kind string
	// Limit caps the rows redriven by one call; 0 means
	// OutboxRedriveLimitDefault (1000).
	Limit int
	// Now is the rows' new available_at; zero means the store's clock.
	Now time.Time
}

// OutboxRedriveResult is the output of [OutboxStore.RedriveOutboxIfDead].
type OutboxRedriveResult struct {
	// Redriven is the number of rows moved from dead to pending.
	Redriven int64
}

// OutboxPruneParams are the input of [OutboxStore.PruneOutboxIfDone].
type OutboxPruneParams struct {
	// Before: done rows whose done_at is before this instant are deleted.
	// Required.
	Before time.Time
	// Limit caps the rows deleted by one call; 0 means
	// OutboxPruneLimitDefault (1000).
	Limit int
}

// OutboxPruneResult is the output of [OutboxStore.PruneOutboxIfDone].
type OutboxPruneResult struct {
	// Deleted is the number of rows deleted.
	Deleted int64
}

// OutboxStatsParams are the input of [OutboxStore.OutboxStats].
type OutboxStatsParams struct {
	// Kind limits the counts to one kind; "" counts every kind.
	Kind string
	// Now is the time Held and Backoff are judged at; zero means the
	// store's clock.
	Now time.Time
}

// OutboxStatsResult is the output of [OutboxStore.OutboxStats].
type OutboxStatsResult struct {
	// Pending counts pending rows (due now or later); Claimed rows being
	// carried out (or whose claimer died, until the lease lapses); Dead
	// rows waiting for a redrive.
	Pending, Claimed, Dead int64
	// Held counts, of Pending, the rows held at Now ([OutboxRow.Held]:
	// never tried, due after Now): written held for direct dispatch and
	// not recorded yet, or added with a later AvailableAt. Backoff counts,
	// of Pending, the rows waiting out a retry backoff (tried, due after
	// Now). Pending - Held - Backoff rows are due.
	Held, Backoff int64
	// OldestPendingCreatedAt is the created_at of the oldest row that is
	// pending or claimed; zero when there is none. Its age is the longest
	// any effect has been waiting since its transaction committed.
	OldestPendingCreatedAt time.Time
}

// Backlog returns the rows not yet carried out: Pending + Claimed.
func (r *OutboxStatsResult) Backlog() int64 { return r.Pending + r.Claimed }

// OldestPendingAge returns how long the oldest pending or claimed row has
// waited at now, or 0 when there is none.
func (r *OutboxStatsResult) OldestPendingAge(now time.Time) time.Duration {
	if r.OldestPendingCreatedAt.IsZero() {
		return 0
	}
	return max(now.Sub(r.OldestPendingCreatedAt), 0)
}

// OutboxListenParams are the input of [OutboxStore.ListenOutbox].
type OutboxListenParams struct {
	// Notify is called from the listening goroutine once listening has
	// begun and after each commit that added outbox rows. It must not
	// block. Required.
	Notify func()
}
