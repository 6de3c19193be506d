package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/stores"
)

// runOutboxSettleMany checks [stores.OutboxStore.SettleOutboxIfClaimedOrHeld]:
// one call records done, retry and dead rows of a claim,
// each behind its own guard, and leaves a row whose claim was lost alone.
func runOutboxSettleMany[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx], t0 time.Time, lease time.Duration) {
	t.Run("SettleManyIfClaimed", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ctx := context.Background()
		ids := addRows(t, h, row("charge", "k1", t0, t0), row("charge", "k2", t0, t0), row("charge", "k3", t0, t0),
			row("charge", "k4", t0, t0))
		first := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0}).Rows
		require.Len(t, first, 4)
		// k4's lease lapses and another relay claims it: the first claim's
		// token for k4 is stale.
		fresh := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(2 * lease)}).Rows
		require.Len(t, fresh, 4, "every lease lapsed")
		// Re-take k1..k3 under the fresh claim's token and settle them with
		// it; settle k4 with the stale one.
		now := t0.Add(2*lease + time.Second)
		res, err := o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Now: now, Rows: []stores.OutboxSettlement{
			{ID: ids[0], ClaimToken: fresh[0].Claim.Token, State: stores.OutboxDone},
			{ID: ids[1], ClaimToken: fresh[1].Claim.Token, State: stores.OutboxPending, Delay: time.Hour, LastError: "503"},
			{ID: ids[2], ClaimToken: fresh[2].Claim.Token, State: stores.OutboxDead, LastError: "400"},
			{ID: ids[3], ClaimToken: first[3].Claim.Token, State: stores.OutboxDone},
		}})
		require.NoError(t, err)
		require.Equal(t, []bool{true, true, true, false}, res.Changed, "k4's claim was lost: nothing written to it")

		byID := map[int64]stores.OutboxRow{}
		for _, r := range listAll(t, o) {
			byID[r.ID] = r
		}
		require.Equal(t, []any{stores.OutboxDone, ""}, []any{byID[ids[0]].State, byID[ids[0]].LastError})
		require.Equal(t, []any{stores.OutboxPending, "503"}, []any{byID[ids[1]].State, byID[ids[1]].LastError})
		require.WithinDuration(t, now.Add(time.Hour), byID[ids[1]].AvailableAt, time.Millisecond, "due after its delay, from Now")
		require.Equal(t, []any{stores.OutboxDead, "400"}, []any{byID[ids[2]].State, byID[ids[2]].LastError})
		require.Equal(t, []any{stores.OutboxClaimed, 2}, []any{byID[ids[3]].State, byID[ids[3]].Attempts}, "the stale settle wrote nothing")

		// The tokens are spent: settling again changes nothing.
		res, err = o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
			{ID: ids[0], ClaimToken: fresh[0].Claim.Token, State: stores.OutboxDead, LastError: "late"},
		}})
		require.NoError(t, err)
		require.Equal(t, []bool{false}, res.Changed)

		// The retried row comes back after its delay; the done row has its
		// done_at (pruning finds it); the dead one is never claimed.
		require.Empty(t, claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: now.Add(lease / 2)}).Rows, "k2 waits for its delay, k4 for its lease")
		got := claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: now.Add(time.Hour + lease)})
		require.ElementsMatch(t, []int64{ids[1], ids[3]}, claimedIDs(got), "k2 after its delay, k4 after its second lease")
		pruned, err := o.PruneOutboxIfDone(ctx, &stores.OutboxPruneParams{Before: now.Add(time.Second)})
		require.NoError(t, err)
		require.Equal(t, int64(1), pruned.Deleted, "the done row has done_at = Now")

		empty, err := o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{})
		require.NoError(t, err)
		require.Empty(t, empty.Changed)
		_, err = o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
			{ID: 1, State: "claimed", Delay: -time.Second}, {ID: 1, ClaimToken: "t", State: stores.OutboxDone},
		}})
		require.ErrorContains(t, err, "invalid outbox settle")
		require.ErrorContains(t, err, "ClaimToken is empty")
		require.ErrorContains(t, err, `State is "claimed"`)
		require.ErrorContains(t, err, "Delay is -1s")
		require.ErrorContains(t, err, "id 1 appears twice")
	})
}

// runOutboxSettleHeld checks [stores.OutboxStore.SettleOutboxIfClaimedOrHeld]:
// rows inserted held (pending, due at their hold's end) are not claimed
// before it, one call records done, retry and dead by idempotency key with
// attempts 1, and a row whose hold lapsed and that a relay claimed, or one
// whose hold does not match, is left alone.
func runOutboxSettleHeld[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx], t0 time.Time, lease time.Duration) {
	t.Run("SettleManyIfHeld", func(t *testing.T) {
		o, h := outboxSetup(t, setup)
		ctx := context.Background()
		// Held for a lease, to the microsecond and beyond: the guard compares
		// microseconds.
		hold := t0.Add(lease + 1234*time.Nanosecond)
		ids := addRows(t, h, row("charge", "h1", t0, hold), row("charge", "h2", t0, hold), row("charge", "h3", t0, hold),
			row("charge", "h4", t0, hold), row("charge", "h5", t0, hold))
		require.Len(t, ids, 5)
		require.Empty(t, claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: t0.Add(lease / 2)}).Rows, "held rows are not due before the hold ends")
		// The holds lapse and a relay claims the rows: h4's dispatcher is too
		// late.
		require.Len(t, claim(t, o, &stores.OutboxClaimParams{Lease: lease, Now: hold.Add(time.Second)}).Rows, 5)
		// Fresh held rows for the other outcomes.
		fresh := "fresh-" + t.Name()
		ids2 := addRows(t, h, row("charge", fresh+"1", t0, hold), row("charge", fresh+"2", t0, hold), row("charge", fresh+"3", t0, hold),
			row("charge", fresh+"5", t0, hold))
		now := t0.Add(time.Second)
		res, err := o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Now: now, Rows: []stores.OutboxSettlement{
			{IdempotencyKey: fresh + "1", HeldUntil: hold, State: stores.OutboxDone},
			{IdempotencyKey: fresh + "2", HeldUntil: hold, State: stores.OutboxPending, Delay: time.Hour, LastError: "503"},
			{IdempotencyKey: fresh + "3", HeldUntil: hold, State: stores.OutboxDead, LastError: "400"},
			{IdempotencyKey: "h4", HeldUntil: hold, State: stores.OutboxDone},
			{IdempotencyKey: fresh + "5", HeldUntil: hold.Add(time.Millisecond), State: stores.OutboxDone},
			{IdempotencyKey: "no-such-key", HeldUntil: hold, State: stores.OutboxDone},
		}})
		require.NoError(t, err)
		require.Equal(t, []bool{true, true, true, false, false, false}, res.Changed,
			"h4 was claimed after its hold, the fifth row's hold differs, the last has no row")
		require.Equal(t, []int64{ids2[0], ids2[1], ids2[2], 0, 0, 0}, res.IDs,
			"the id of each row written, for the relay's logs (a dispatched row is known by its key)")
		byID := map[int64]stores.OutboxRow{}
		for _, r := range listAll(t, o) {
			byID[r.ID] = r
		}
		require.Equal(t, []any{stores.OutboxDone, 1}, []any{byID[ids2[0]].State, byID[ids2[0]].Attempts})
		require.Equal(t, []any{stores.OutboxPending, 1, "503"}, []any{byID[ids2[1]].State, byID[ids2[1]].Attempts, byID[ids2[1]].LastError})
		require.WithinDuration(t, now.Add(time.Hour), byID[ids2[1]].AvailableAt, time.Millisecond, "due after its delay, from Now")
		require.Equal(t, []any{stores.OutboxDead, 1, "400"}, []any{byID[ids2[2]].State, byID[ids2[2]].Attempts, byID[ids2[2]].LastError})
		require.Equal(t, []any{stores.OutboxClaimed, 1}, []any{byID[ids[3]].State, byID[ids[3]].Attempts}, "h4 keeps its claim")
		require.Equal(t, []any{stores.OutboxPending, 0}, []any{byID[ids2[3]].State, byID[ids2[3]].Attempts}, "a hold that does not match writes nothing")

		// Settled once: a second settle changes nothing.
		res, err = o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
			{IdempotencyKey: fresh + "1", HeldUntil: hold, State: stores.OutboxDead, LastError: "late"},
		}})
		require.NoError(t, err)
		require.Equal(t, []bool{false}, res.Changed)

		empty, err := o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{})
		require.NoError(t, err)
		require.Empty(t, empty.Changed)
		_, err = o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
			{State: "claimed", Delay: -time.Second}, {IdempotencyKey: "k", HeldUntil: hold, State: stores.OutboxDone},
			{IdempotencyKey: "k", HeldUntil: hold, State: stores.OutboxDone},
		}})
		require.ErrorContains(t, err, "invalid outbox settle")
		require.ErrorContains(t, err, "IdempotencyKey is empty")
		require.ErrorContains(t, err, "HeldUntil is zero")
		require.ErrorContains(t, err, `State is "claimed"`)
		require.ErrorContains(t, err, "Delay is -1s")
		require.ErrorContains(t, err, `key "k" appears twice`)
	})
}
