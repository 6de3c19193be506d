package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// runOutbox runs the conformance suite of [stores.OutboxStore], the part
// of a store the outbox relay uses. The harness's Store must implement
// stores.OutboxStore; [Run] runs it when it does.
//
// It checks: claims take due rows oldest first, filter by kind and count
// attempts; a lease holds until it lapses, and a lapsed lease is claimed
// again with a new token; a stale claim (lease lapsed, row claimed again)
// can mark nothing done, retried or dead; retry-later hides the row until
// its delay passed and keeps the error; dead rows are never claimed and
// come back through redrive with attempts reset; pruning deletes only done
// rows older than the cutoff; stats count the backlog and find its oldest
// row; concurrent claimers never get the same row; bad params are refused;
// and one SettleOutboxIfClaimedOrHeld call records a claim's done, retried
// and dead rows behind each row's guard.
func runOutbox[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx]) {
	// t0 is the suite's clock: every call passes Now relative to it, so
	// leases and delays lapse without sleeping.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	const lease = time.Minute

	t.Run("ClaimOldestDueFirst", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ids := addRows(t, h,
			row("charge", "k1", t0.Add(-time.Minute), t0),
			row("charge", "k2", t0.Add(-2*time.Minute), t0.Add(-time.Second)), // due earlier
			row("charge", "k3", t0, t0.Add(time.Second)),                      // not yet due
			row("charge", "k4", t0, t0),
		)
		res := claim(t, o, &stores.OutboxClaimParams{Limit: 2, Lease: lease, Now: t0})
		require.Equal(t, []int64{ids[0], ids[1]}, claimedIDs(res), "k2 (due first) and k1 (then lower id); ordered by id")
		for _, r := range res.Rows {
			require.Equal(t, stores.OutboxClaimed, r.State)
			require.Equal(t, 1, r.Attempts)
			require.Len(t, r.Claim.Token, 32)
			require.Equal(t, r.ID, r.Claim.ID)
			// The lease runs from Now, or from later when the store waited
			// for a lock first (sqlitestore starts it once the write lock
			// is held): never shorter than asked, and not much longer.
			require.False(t, r.Claim.Until.Before(t0.Add(lease).Add(-time.Millisecond)), "the lease is never shorter than asked: until %s", r.Claim.Until)
			require.WithinDuration(t, t0.Add(lease), r.Claim.Until, 10*time.Second)
			require.WithinDuration(t, r.Claim.Until, r.AvailableAt, time.Millisecond, "available_at moves to the lease's end")
		}
		require.Equal(t, "k1", res.Rows[0].IdempotencyKey)
		require.Equal(t, map[string]string{"h": "k1"}, res.Rows[0].Headers)
		require.Equal(t, `{"key":"k1"}`, string(res.Rows[0].Payload))
		require.Equal(t, res.Rows[0].Claim.Token, res.Rows[1].Claim.Token, "one token per claim call")

		res = claim(t, o, &stores.OutboxClaimParams{Limit: 10, Lease: lease, Now: t0})
		require.Equal(t, []int64{ids[3]}, claimedIDs(res), "k3 is not due before its available_at")
		res = claim(t, o, &stores.OutboxClaimParams{Limit: 10, Lease: lease, Now: t0.Add(time.Second)})
		require.Equal(t, []int64{ids[2]}, claimedIDs(res))
		require.Empty(t, claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(time.Second)}).Rows)
	})

	t.Run("ClaimFiltersKinds", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ids := addRows(t, h, row("charge", "c1", t0, t0), row("email.receipt", "r1", t0, t0), row("sms", "s1", t0, t0))
		res := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Kinds: []string{"email.receipt", "sms"}, Now: t0})
		require.Equal(t, []int64{ids[1], ids[2]}, claimedIDs(res))
		res = claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0})
		require.Equal(t, []int64{ids[0]}, claimedIDs(res), "no Kinds: every kind")
	})

	t.Run("LeaseHoldsThenLapses", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ids := addRows(t, h, row("charge", "k1", t0, t0))
		first := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0})
		require.Equal(t, ids, claimedIDs(first))
		require.Empty(t, claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(lease / 2)}).Rows,
			"a row under a live lease is not claimed again")
		again := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(lease + time.Millisecond)})
		require.Equal(t, ids, claimedIDs(again), "a lapsed lease is claimable: its claimer is presumed dead")
		require.Equal(t, 2, again.Rows[0].Attempts, "the crashed attempt counts")
		require.NotEqual(t, first.Rows[0].Claim.Token, again.Rows[0].Claim.Token)
		require.Equal(t, stores.OutboxClaimed, listAll(t, o)[0].State)
	})

	t.Run("StaleClaimChangesNothing", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ctx := context.Background()
		addRows(t, h, row("charge", "k1", t0, t0))
		stale := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0}).Rows[0].Claim
		fresh := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(2 * lease)}).Rows[0].Claim

		changed, err := settleOne(ctx, o, stores.OutboxSettlement{ID: stale.ID, ClaimToken: stale.Token, State: stores.OutboxDone}, t0)
		require.NoError(t, err, "a lost claim is a result, not an error")
		require.False(t, changed)
		changed, err = settleOne(ctx, o, stores.OutboxSettlement{ID: stale.ID, ClaimToken: stale.Token, State: stores.OutboxPending, LastError: "stale"}, t0)
		require.NoError(t, err)
		require.False(t, changed)
		changed, err = settleOne(ctx, o, stores.OutboxSettlement{ID: stale.ID, ClaimToken: stale.Token, State: stores.OutboxDead, LastError: "stale"}, time.Time{})
		require.NoError(t, err)
		require.False(t, changed)
		r := listAll(t, o)[0]
		require.Equal(t, []any{stores.OutboxClaimed, 2, ""}, []any{r.State, r.Attempts, r.LastError}, "the stale claim wrote nothing")

		changed, err = settleOne(ctx, o, stores.OutboxSettlement{ID: fresh.ID, ClaimToken: fresh.Token, State: stores.OutboxDone}, t0.Add(2*lease))
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, stores.OutboxDone, listAll(t, o)[0].State)
		changed, err = settleOne(ctx, o, stores.OutboxSettlement{ID: fresh.ID, ClaimToken: fresh.Token, State: stores.OutboxDone}, time.Time{})
		require.NoError(t, err)
		require.False(t, changed, "done once; the token is spent")
		require.Empty(t, claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(24 * time.Hour)}).Rows, "done rows are never claimed")

		_, err = settleOne(ctx, o, stores.OutboxSettlement{ID: fresh.ID, State: stores.OutboxDone}, time.Time{})
		require.ErrorContains(t, err, "ClaimToken is empty")
	})

	t.Run("RetryLater", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ctx := context.Background()
		addRows(t, h, row("charge", "k1", t0, t0))
		c := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0}).Rows[0].Claim
		changed, err := settleOne(ctx, o, stores.OutboxSettlement{
			ID: c.ID, ClaimToken: c.Token, State: stores.OutboxPending, Delay: 10 * time.Second, LastError: "HTTP 503",
		}, t0)
		require.NoError(t, err)
		require.True(t, changed)
		r := listAll(t, o)[0]
		require.Equal(t, []any{stores.OutboxPending, 1, "HTTP 503"}, []any{r.State, r.Attempts, r.LastError})
		require.WithinDuration(t, t0.Add(10*time.Second), r.AvailableAt, time.Millisecond)
		require.Empty(t, claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(9 * time.Second)}).Rows, "not before its delay")
		again := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(10 * time.Second)})
		require.Len(t, again.Rows, 1)
		require.Equal(t, 2, again.Rows[0].Attempts)
		require.Equal(t, "HTTP 503", again.Rows[0].LastError, "the last error travels with the row")
		changed, err = settleOne(ctx, o, stores.OutboxSettlement{ID: c.ID, ClaimToken: c.Token, State: stores.OutboxPending}, t0)
		require.NoError(t, err)
		require.False(t, changed, "the first claim's token is spent")
		_, err = settleOne(ctx, o, stores.OutboxSettlement{ID: c.ID, ClaimToken: again.Rows[0].Claim.Token, State: stores.OutboxPending, Delay: -time.Second}, time.Time{})
		require.ErrorContains(t, err, "Delay")
	})

	t.Run("DeadAndRedrive", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ctx := context.Background()
		ids := addRows(t, h, row("charge", "k1", t0, t0), row("email.receipt", "k2", t0, t0), row("charge", "k3", t0, t0))
		for _, r := range claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0}).Rows {
			changed, err := settleOne(ctx, o, stores.OutboxSettlement{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxDead, LastError: "HTTP 400: " + r.IdempotencyKey}, time.Time{})
			require.NoError(t, err)
			require.True(t, changed)
		}
		require.Empty(t, claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(24 * time.Hour)}).Rows, "dead rows are never claimed")
		dead, err := o.ListOutbox(ctx, &stores.OutboxListParams{State: stores.OutboxDead})
		require.NoError(t, err)
		require.Len(t, dead.Rows, 3)
		require.Equal(t, "HTTP 400: k1", dead.Rows[0].LastError)

		red, err := o.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{IDs: []int64{ids[0]}, Now: t0.Add(time.Hour)})
		require.NoError(t, err)
		require.EqualValues(t, 1, red.Redriven)
		r := listAll(t, o)[0]
		require.Equal(t, []any{stores.OutboxPending, 0, "HTTP 400: k1"}, []any{r.State, r.Attempts, r.LastError},
			"pending again, attempts reset, the error kept for the record")
		require.WithinDuration(t, t0.Add(time.Hour), r.AvailableAt, time.Millisecond)
		red, err = o.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{IDs: []int64{ids[0]}})
		require.NoError(t, err)
		require.Zero(t, red.Redriven, "a row that is not dead is left alone")

		red, err = o.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{Kind: "email.receipt", Now: t0.Add(time.Hour)})
		require.NoError(t, err)
		require.EqualValues(t, 1, red.Redriven, "by kind")
		red, err = o.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{Limit: 10, Now: t0.Add(time.Hour)})
		require.NoError(t, err)
		require.EqualValues(t, 1, red.Redriven, "all the rest")

		res := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(time.Hour)})
		require.Equal(t, ids, claimedIDs(res))
		require.Equal(t, 1, res.Rows[0].Attempts)
	})

	t.Run("PruneDoneOnly", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ctx := context.Background()
		ids := addRows(t, h, row("charge", "old", t0, t0), row("charge", "new", t0, t0), row("charge", "dead", t0, t0), row("charge", "pending", t0, t0))
		claimed := claim(t, o, &stores.OutboxClaimParams{Limit: 3, Lease: lease, Now: t0}).Rows
		markDone(t, o, claimed[0], t0.Add(-2*time.Hour))
		markDone(t, o, claimed[1], t0)
		markDead(t, o, claimed[2])

		res, err := o.PruneOutboxIfDone(ctx, &stores.OutboxPruneParams{Before: t0.Add(-time.Hour)})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.Deleted, "only the row done before the cutoff")
		res, err = o.PruneOutboxIfDone(ctx, &stores.OutboxPruneParams{Before: t0.Add(48 * time.Hour), Limit: 5})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.Deleted, "dead and pending rows are never pruned")
		var left []int64
		for _, r := range listAll(t, o) {
			left = append(left, r.ID)
		}
		require.Equal(t, ids[2:], left)
		_, err = o.PruneOutboxIfDone(ctx, &stores.OutboxPruneParams{})
		require.Error(t, err, "a zero Before is refused, not 'delete everything'")
	})

	t.Run("Stats", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ctx := context.Background()
		empty, err := o.OutboxStats(ctx, &stores.OutboxStatsParams{})
		require.NoError(t, err)
		require.Equal(t, &stores.OutboxStatsResult{}, empty)
		require.Zero(t, empty.OldestPendingAge(t0))

		addRows(t, h,
			row("charge", "k1", t0.Add(-10*time.Minute), t0.Add(-10*time.Minute)),
			row("charge", "k2", t0.Add(-5*time.Minute), t0.Add(-5*time.Minute)),
			row("email.receipt", "k3", t0.Add(-time.Minute), t0.Add(-time.Minute)),
			row("charge", "k4", t0.Add(-time.Minute), t0.Add(-time.Minute)),
			row("charge", "k5", t0, t0.Add(time.Hour)),
		)
		claimed := claim(t, o, &stores.OutboxClaimParams{Limit: 4, Lease: lease, Now: t0}).Rows
		require.Len(t, claimed, 4)
		markDone(t, o, claimed[3], t0) // k4
		markDead(t, o, claimed[1])     // k2

		st, err := o.OutboxStats(ctx, &stores.OutboxStatsParams{})
		require.NoError(t, err)
		require.Equal(t, []int64{1, 2, 1, 3}, []int64{st.Pending, st.Claimed, st.Dead, st.Backlog()}, "k5 pending; k1, k3 claimed; k2 dead; k4 done")
		require.WithinDuration(t, t0.Add(-10*time.Minute), st.OldestPendingCreatedAt, time.Millisecond, "a claimed row is not carried out yet")
		require.InDelta(t, (10 * time.Minute).Seconds(), st.OldestPendingAge(t0).Seconds(), 0.01)

		st, err = o.OutboxStats(ctx, &stores.OutboxStatsParams{Kind: "email.receipt"})
		require.NoError(t, err)
		require.Equal(t, []int64{0, 1, 0}, []int64{st.Pending, st.Claimed, st.Dead})
		require.WithinDuration(t, t0.Add(-time.Minute), st.OldestPendingCreatedAt, time.Millisecond)
	})

	t.Run("ConcurrentClaimersNeverOverlap", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ctx := context.Background()
		const rows, claimers = 300, 6
		params := make([]ackgap.OutboxEntry, rows)
		for i := range params {
			params[i] = ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: fmt.Sprintf("k%03d", i), Payload: []byte("{}")}
		}
		ids := addRows(t, h, params...)
		var (
			mu    sync.Mutex
			got   = map[int64]int{}
			errs  []error
			start = make(chan struct{})
			wg    sync.WaitGroup
			calls atomic.Int64
		)
		for range claimers {
			wg.Go(func() {
				<-start
				for {
					calls.Add(1)
					res, err := o.ClaimOutbox(ctx, &stores.OutboxClaimParams{Limit: 7, Lease: time.Hour})
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					} else {
						for _, r := range res.Rows {
							got[r.ID]++
						}
					}
					mu.Unlock()
					if err != nil || len(res.Rows) == 0 {
						return
					}
				}
			})
		}
		close(start)
		wg.Wait()
		require.Empty(t, errs)
		require.Len(t, got, rows, "every row claimed")
		for id, n := range got {
			require.Equal(t, 1, n, "row %d claimed %d times", id, n)
		}
		require.ElementsMatch(t, ids, keys(got))
		for _, r := range listAll(t, o) {
			require.Equal(t, 1, r.Attempts)
		}
		require.Greater(t, calls.Load(), int64(rows/7), "the claimers took turns")
	})

	runOutboxSettleMany(t, setup, t0, lease)
	runOutboxSettleHeld(t, setup, t0, lease)

	t.Run("InvalidParams", func(t *testing.T) {
		o, _ := outboxSetup(t, setup)
		_, err := o.ClaimOutbox(context.Background(), &stores.OutboxClaimParams{Limit: stores.OutboxClaimLimitMax + 1, Kinds: []string{""}})
		require.ErrorContains(t, err, "invalid outbox claim")
		require.ErrorContains(t, err, "Limit is 1001")
		require.ErrorContains(t, err, "Lease is 0s")
		require.ErrorContains(t, err, "Kinds[0] is empty")
	})
}

func outboxSetup[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx]) (stores.OutboxStore, *Harness[TTx]) {
	t.Helper()
	h := setup(t)
	o, ok := h.Store.(stores.OutboxStore)
	require.True(t, ok, "%T does not implement stores.OutboxStore", h.Store)
	return o, h
}

// row is an outbox row of kind with key k, created at created and due at
// available.
func row(kind, k string, created, available time.Time) ackgap.OutboxEntry {
	return ackgap.OutboxEntry{
		Kind: kind, IdempotencyKey: k, Payload: []byte(`{"key":"` + k + `"}`),
		Headers: map[string]string{"h": k}, Now: created, AvailableAt: available,
	}
}

var outboxEvents atomic.Int64

// addRows inserts rows (distinct keys) in one inbox transaction, one
// statement each, and returns their ids, read back by key.
func addRows[TTx any](t *testing.T, h *Harness[TTx], rows ...ackgap.OutboxEntry) []int64 {
	t.Helper()
	ctx := context.Background()
	res := begin(t, h, "storetest", fmt.Sprintf("outbox-%d-%d", time.Now().UnixNano(), outboxEvents.Add(1)), nil)
	for i := range rows {
		dup, err := insertOutbox(ctx, h.Store, res.Tx, rows[i])
		require.NoError(t, err)
		require.False(t, dup, "addRows takes new keys")
	}
	require.NoError(t, h.Store.CommitTx(ctx, res.Tx))
	byKey := map[string]int64{}
	for _, r := range listOutbox(t, h) {
		byKey[r.IdempotencyKey] = r.ID
	}
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, byKey[r.IdempotencyKey])
	}
	return ids
}

func claim(t *testing.T, o stores.OutboxStore, p *stores.OutboxClaimParams) *stores.OutboxClaimResult {
	t.Helper()
	res, err := o.ClaimOutbox(context.Background(), p)
	require.NoError(t, err)
	return res
}

func claimedIDs(res *stores.OutboxClaimResult) []int64 {
	var ids []int64
	for _, r := range res.Rows {
		ids = append(ids, r.ID)
	}
	return ids
}

// settleOne records the outcome of one claimed row and returns whether
// the store wrote it; now is the settle's Now.
func settleOne(ctx context.Context, o stores.OutboxStore, s stores.OutboxSettlement, now time.Time) (bool, error) {
	res, err := o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{s}, Now: now})
	if err != nil {
		return false, err
	}
	return res.Changed[0], nil
}

// markDone settles r done at at; it must still be claimed.
func markDone(t *testing.T, o stores.OutboxStore, r stores.OutboxRow, at time.Time) {
	t.Helper()
	changed, err := settleOne(context.Background(), o, stores.OutboxSettlement{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxDone}, at)
	require.NoError(t, err)
	require.True(t, changed)
}

// markDead settles r dead with last error "x"; it must still be claimed.
func markDead(t *testing.T, o stores.OutboxStore, r stores.OutboxRow) {
	t.Helper()
	changed, err := settleOne(context.Background(), o, stores.OutboxSettlement{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxDead, LastError: "x"}, time.Time{})
	require.NoError(t, err)
	require.True(t, changed)
}

func listAll(t *testing.T, o stores.OutboxStore) []stores.OutboxRow {
	t.Helper()
	res, err := o.ListOutbox(context.Background(), &stores.OutboxListParams{})
	require.NoError(t, err)
	return res.Rows
}

func keys(m map[int64]int) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
