package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// runOperator runs the conformance suite of [stores.Operator], the part of
// a store the ackgap command uses. The harness's Store must implement
// stores.Operator; setup is called once per subtest, as for [Run].
//
// It checks: migration status after Migrate; inbox counts per consumer with
// the recent window; outbox counts per kind and state, the oldest due
// row, and held rows told from rows waiting out a backoff; event lookup across consumers with the outbox rows the event wrote;
// every outbox filter and paging; deletes guarded by state, twice changing
// nothing the second time; bad params refused.
func runOperator[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx]) {
	// t0 is the suite's clock, as in runOutbox.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	const lease = time.Minute

	opSetup := func(t *testing.T) (stores.Operator, *Harness[TTx]) {
		t.Helper()
		h := setup(t)
		o, ok := h.Store.(stores.Operator)
		require.True(t, ok, "%T does not implement stores.Operator", h.Store)
		return o, h
	}
	inbox := func(t *testing.T, h *Harness[TTx], consumer, eventID string, at time.Time, rows ...ackgap.OutboxEntry) {
		t.Helper()
		ctx := context.Background()
		res, err := beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: consumer, EventID: eventID,
			PayloadHash: hashOf(eventID), Now: at, TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
		require.NoError(t, err)
		require.False(t, res.Duplicate)
		for i := range rows {
			rows[i].Consumer, rows[i].EventID = consumer, eventID
			_, err := insertOutbox(ctx, h.Store, res.Tx, rows[i])
			require.NoError(t, err)
		}
		require.NoError(t, h.Store.CommitTx(ctx, res.Tx))
	}
	// kill claims every due row and marks those of ids dead, the others done.
	settle := func(t *testing.T, o stores.Operator, dead map[int64]bool) {
		t.Helper()
		res := claim(t, o, &stores.OutboxClaimParams{Limit: 1000, Lease: lease, Now: t0})
		for _, r := range res.Rows {
			if dead[r.ID] {
				changed, err := settleOne(context.Background(), o, stores.OutboxSettlement{ID: r.ID, ClaimToken: r.Claim.Token, State: stores.OutboxDead, LastError: "boom"}, time.Time{})
				require.NoError(t, err)
				require.True(t, changed)
			} else {
				markDone(t, o, r, t0)
			}
		}
	}

	t.Run("MigrationStatus", func(t *testing.T) {
		o, _ := opSetup(t)
		res, err := o.MigrationStatus(context.Background(), &stores.MigrationStatusParams{})
		require.NoError(t, err)
		require.NotEmpty(t, res.Migrations)
		require.Equal(t, res.Latest, res.Version, "the harness's store is migrated to the newest version")
		require.Empty(t, res.Pending())
		for i, m := range res.Migrations {
			require.Equal(t, i+1, m.Version)
			require.NotEmpty(t, m.Name)
			require.True(t, m.Applied)
			require.WithinDuration(t, time.Now(), m.AppliedAt, time.Hour)
		}

		_, err = o.Migrate(context.Background(), &stores.MigrateParams{Down: true, TargetVersion: res.Latest - 1})
		require.NoError(t, err)
		res, err = o.MigrationStatus(context.Background(), &stores.MigrationStatusParams{})
		require.NoError(t, err)
		require.Equal(t, res.Latest-1, res.Version)
		require.Len(t, res.Pending(), 1)
		require.True(t, res.Pending()[0].AppliedAt.IsZero())

		_, err = o.Migrate(context.Background(), &stores.MigrateParams{Down: true})
		require.NoError(t, err)
		res, err = o.MigrationStatus(context.Background(), &stores.MigrationStatusParams{})
		require.NoError(t, err)
		require.Zero(t, res.Version)
		require.Len(t, res.Pending(), res.Latest)
	})

	t.Run("Stats", func(t *testing.T) {
		o, h := opSetup(t)
		ctx := context.Background()
		inbox(t, h, "billing", "e1", t0.Add(-3*time.Hour))
		inbox(t, h, "billing", "e2", t0.Add(-30*time.Minute), row("charge", "k1", t0.Add(-30*time.Minute), t0.Add(-20*time.Minute)))
		inbox(t, h, "billing", "e3", t0.Add(-time.Minute), row("charge", "k2", t0.Add(-time.Minute), t0.Add(-time.Minute)))
		inbox(t, h, "email", "e1", t0.Add(-2*time.Minute), row("email", "k3", t0.Add(-2*time.Minute), t0.Add(time.Hour)))
		inbox(t, h, "email", "e9", t0.Add(time.Minute)) // after Now: not recent

		res, err := o.Stats(ctx, &stores.StatsParams{Now: t0})
		require.NoError(t, err)
		require.Equal(t, stores.StatsWindowDefault, res.Window)
		require.WithinDuration(t, t0, res.Now, time.Millisecond)
		require.Len(t, res.Inbox, 2)
		b, e := res.Inbox[0], res.Inbox[1]
		require.Equal(t, "billing", b.Consumer)
		require.EqualValues(t, 3, b.Rows)
		require.EqualValues(t, 2, b.Recent)
		require.WithinDuration(t, t0.Add(-3*time.Hour), b.Oldest, time.Millisecond)
		require.WithinDuration(t, t0.Add(-time.Minute), b.Newest, time.Millisecond)
		require.InDelta(t, 2.0/60, b.PerMinute(res.Window), 1e-9)
		require.Equal(t, "email", e.Consumer)
		require.EqualValues(t, 2, e.Rows)
		require.EqualValues(t, 1, e.Recent)

		require.Equal(t, []stores.OutboxKindStats{
			{Kind: "charge", State: stores.OutboxPending, Rows: 2},
			{Kind: "email", State: stores.OutboxPending, Rows: 1, Held: 1},
		}, stripTimes(res.Outbox))
		require.WithinDuration(t, t0.Add(-30*time.Minute), res.Outbox[0].OldestCreatedAt, time.Millisecond)
		require.WithinDuration(t, t0.Add(-20*time.Minute), res.OldestDueAt, time.Millisecond, "k1 is the oldest due; k3 is not due yet")
		require.EqualValues(t, 1, res.Held, "k3: never tried, due in an hour")
		require.WithinDuration(t, t0.Add(time.Hour), res.HeldUntil, time.Millisecond)
		require.Zero(t, res.Backoff)

		res, err = o.Stats(ctx, &stores.StatsParams{Now: t0, Window: 2 * time.Minute})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.Inbox[0].Recent, "only e3 within two minutes")

		empty, _ := opSetup(t)
		res, err = empty.Stats(ctx, &stores.StatsParams{})
		require.NoError(t, err)
		require.Empty(t, res.Inbox)
		require.Empty(t, res.Outbox)
		require.True(t, res.OldestDueAt.IsZero())
		require.Zero(t, res.Held)
		require.True(t, res.HeldUntil.IsZero())
		require.WithinDuration(t, time.Now(), res.Now, time.Minute, "zero Now is the store's clock")
	})

	// HeldAndBackoff: pending rows not due are told apart by their
	// attempts: never tried (held for direct dispatch, or delayed) or
	// waiting out a retry backoff. Stats, OutboxStats, FindOutbox's Held
	// filter and OutboxRow.Held agree, at a given Now and at the store's
	// clock, and a held row is due (not held) from the instant its hold
	// ends.
	t.Run("HeldAndBackoff", func(t *testing.T) {
		o, h := opSetup(t)
		ctx := context.Background()
		tried := addRows(t, h,
			row("charge", "retried-due", t0.Add(-3*time.Minute), t0.Add(-3*time.Minute)),
			row("charge", "backoff", t0.Add(-2*time.Minute), t0.Add(-2*time.Minute)))
		claimed := claim(t, o, &stores.OutboxClaimParams{Limit: 10, Lease: lease, Now: t0})
		require.Equal(t, tried, claimedIDs(claimed))
		settled, err := o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Now: t0, Rows: []stores.OutboxSettlement{
			{ID: tried[0], ClaimToken: claimed.Rows[0].Claim.Token, State: stores.OutboxPending, LastError: "503"},
			{ID: tried[1], ClaimToken: claimed.Rows[1].Claim.Token, State: stores.OutboxPending, Delay: 10 * time.Minute, LastError: "503"},
		}})
		require.NoError(t, err)
		require.Equal(t, []bool{true, true}, settled.Changed)
		hold := t0.Add(lease)
		fresh := addRows(t, h,
			row("charge", "due", t0.Add(-time.Minute), t0.Add(-time.Minute)),
			row("charge", "held", t0, hold),
			row("charge", "held-settled", t0, hold.Add(time.Second)),
			row("email", "delayed", t0, t0.Add(3*time.Hour)), // a handler's AvailableAt: held too
		)
		res, err := o.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Now: t0, Rows: []stores.OutboxSettlement{
			{IdempotencyKey: "held-settled", HeldUntil: hold.Add(time.Second), State: stores.OutboxDone},
		}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, res.Changed, "the relay of the writing process recorded it: no longer held")

		st, err := o.Stats(ctx, &stores.StatsParams{Now: t0})
		require.NoError(t, err)
		require.Equal(t, []stores.OutboxKindStats{
			{Kind: "charge", State: stores.OutboxDone, Rows: 1},
			{Kind: "charge", State: stores.OutboxPending, Rows: 4, Held: 1, Backoff: 1},
			{Kind: "email", State: stores.OutboxPending, Rows: 1, Held: 1},
		}, stripTimes(st.Outbox))
		require.Equal(t, []int64{2, 1}, []int64{st.Held, st.Backoff})
		require.WithinDuration(t, hold, st.HeldUntil, time.Millisecond, "the first hold ends first")
		require.WithinDuration(t, t0.Add(-time.Minute), st.OldestDueAt, time.Millisecond, "neither held nor backoff rows are due")

		st, err = o.Stats(ctx, &stores.StatsParams{Now: hold})
		require.NoError(t, err)
		require.Equal(t, []int64{1, 1}, []int64{st.Held, st.Backoff}, "a row is due from the instant its hold ends")
		require.WithinDuration(t, t0.Add(3*time.Hour), st.HeldUntil, time.Millisecond)

		ost, err := o.OutboxStats(ctx, &stores.OutboxStatsParams{Now: t0})
		require.NoError(t, err)
		require.Equal(t, []int64{5, 0, 2, 1}, []int64{ost.Pending, ost.Claimed, ost.Held, ost.Backoff})
		ost, err = o.OutboxStats(ctx, &stores.OutboxStatsParams{Kind: "email", Now: t0})
		require.NoError(t, err)
		require.Equal(t, []int64{1, 1, 0}, []int64{ost.Pending, ost.Held, ost.Backoff})
		// The store's clock is about t0 + 1h: only the delayed row is
		// still held, and the backoff has ended.
		ost, err = o.OutboxStats(ctx, &stores.OutboxStatsParams{})
		require.NoError(t, err)
		require.Equal(t, []int64{5, 1, 0}, []int64{ost.Pending, ost.Held, ost.Backoff})

		find := func(p stores.FindOutboxParams) []int64 {
			t.Helper()
			res, err := o.FindOutbox(ctx, &p)
			require.NoError(t, err)
			out := []int64{}
			for _, r := range res.Rows {
				out = append(out, r.ID)
			}
			return out
		}
		require.Equal(t, []int64{fresh[1], fresh[3]}, find(stores.FindOutboxParams{Held: true, Now: t0}))
		require.Equal(t, []int64{fresh[3]}, find(stores.FindOutboxParams{Held: true, Now: t0, Kind: "email"}))
		require.Equal(t, []int64{fresh[3]}, find(stores.FindOutboxParams{Held: true}), "zero Now is the store's clock")
		require.Equal(t, []int64{fresh[3]}, find(stores.FindOutboxParams{Held: true, Now: hold}))
		require.Equal(t, []int64{}, find(stores.FindOutboxParams{Held: true, Now: t0, States: []stores.OutboxState{stores.OutboxDone}}))
		require.Equal(t, []int64{fresh[1], fresh[3]}, find(stores.FindOutboxParams{Held: true, Now: t0, States: []stores.OutboxState{stores.OutboxPending}}))

		all, err := o.FindOutbox(ctx, &stores.FindOutboxParams{})
		require.NoError(t, err)
		var held []string
		for _, r := range all.Rows {
			if r.Held(t0) {
				held = append(held, r.IdempotencyKey)
			}
		}
		require.Equal(t, []string{"held", "delayed"}, held, "OutboxRow.Held agrees with the store")
	})

	t.Run("LookupEvent", func(t *testing.T) {
		o, h := opSetup(t)
		ctx := context.Background()
		inbox(t, h, "billing", "e1", t0, row("charge", "charge:e1", t0, t0), row("email", "email:e1", t0, t0))
		inbox(t, h, "audit", "e1", t0.Add(time.Second))
		inbox(t, h, "billing", "e2", t0, row("charge", "charge:e2", t0, t0))

		res, err := o.LookupEvent(ctx, &stores.LookupEventParams{EventID: "e1"})
		require.NoError(t, err)
		require.Len(t, res.Inbox, 2)
		require.Equal(t, "audit", res.Inbox[0].Consumer)
		require.Equal(t, "billing", res.Inbox[1].Consumer)
		require.Equal(t, "e1", res.Inbox[1].EventID)
		require.Equal(t, hashOf("e1"), res.Inbox[1].PayloadHash)
		require.Equal(t, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", res.Inbox[1].TraceParent)
		require.WithinDuration(t, t0, res.Inbox[1].ReceivedAt, time.Millisecond)
		require.Len(t, res.Outbox, 2)
		require.Equal(t, "charge:e1", res.Outbox[0].IdempotencyKey)
		require.Equal(t, "email:e1", res.Outbox[1].IdempotencyKey)
		require.Equal(t, "billing", res.Outbox[0].Consumer)

		res, err = o.LookupEvent(ctx, &stores.LookupEventParams{EventID: "e1", Consumer: "audit"})
		require.NoError(t, err)
		require.Len(t, res.Inbox, 1)
		require.Empty(t, res.Outbox)

		res, err = o.LookupEvent(ctx, &stores.LookupEventParams{EventID: "nope"})
		require.NoError(t, err, "an unknown event is an empty result")
		require.Empty(t, res.Inbox)
		require.Empty(t, res.Outbox)

		_, err = o.LookupEvent(ctx, &stores.LookupEventParams{})
		require.ErrorContains(t, err, "EventID is empty")
	})

	t.Run("FindOutboxFilters", func(t *testing.T) {
		o, h := opSetup(t)
		ctx := context.Background()
		ids := addRows(t, h,
			row("charge", "charge:1", t0.Add(-time.Hour), t0),
			row("charge", "charge:2", t0.Add(-time.Minute), t0),
			row("email", "email:1", t0.Add(-time.Hour), t0),
			row("email", "email:2", t0, t0.Add(time.Hour)), // not due: stays pending
			row("charge", "charge_x%", t0, t0.Add(time.Hour)),
		)
		settle(t, o, map[int64]bool{ids[0]: true, ids[2]: true})

		find := func(p stores.FindOutboxParams) []int64 {
			t.Helper()
			res, err := o.FindOutbox(ctx, &p)
			require.NoError(t, err)
			out := []int64{}
			for _, r := range res.Rows {
				out = append(out, r.ID)
			}
			return out
		}
		require.Equal(t, ids, find(stores.FindOutboxParams{}))
		require.Equal(t, []int64{ids[0], ids[2]}, find(stores.FindOutboxParams{States: []stores.OutboxState{stores.OutboxDead}}))
		require.Equal(t, []int64{ids[1], ids[3], ids[4]}, find(stores.FindOutboxParams{States: []stores.OutboxState{stores.OutboxDone, stores.OutboxPending}}))
		require.Equal(t, []int64{ids[2], ids[3]}, find(stores.FindOutboxParams{Kind: "email"}))
		require.Equal(t, []int64{ids[0], ids[1]}, find(stores.FindOutboxParams{KeyPrefix: "charge:"}))
		require.Equal(t, []int64{ids[4]}, find(stores.FindOutboxParams{KeyPrefix: "charge_x%"}), "no pattern characters")
		require.Equal(t, []int64{}, find(stores.FindOutboxParams{KeyPrefix: "charge%"}), "% is not a wildcard")
		require.Equal(t, []int64{ids[0], ids[2]}, find(stores.FindOutboxParams{CreatedBefore: t0.Add(-10 * time.Minute)}))
		require.Equal(t, []int64{ids[3]}, find(stores.FindOutboxParams{IDs: []int64{ids[3], ids[4]}, Kind: "email"}))
		require.Equal(t, []int64{ids[0]}, find(stores.FindOutboxParams{Kind: "charge", States: []stores.OutboxState{stores.OutboxDead}, KeyPrefix: "charge", CreatedBefore: t0}))

		// Paging: two at a time, after the last id seen.
		require.Equal(t, []int64{ids[0], ids[1]}, find(stores.FindOutboxParams{Limit: 2}))
		require.Equal(t, []int64{ids[2], ids[3]}, find(stores.FindOutboxParams{Limit: 2, AfterID: ids[1]}))
		require.Equal(t, []int64{ids[4]}, find(stores.FindOutboxParams{Limit: 2, AfterID: ids[3]}))

		res, err := o.FindOutbox(ctx, &stores.FindOutboxParams{IDs: []int64{ids[0]}})
		require.NoError(t, err)
		r := res.Rows[0]
		require.Equal(t, stores.OutboxDead, r.State)
		require.Equal(t, "boom", r.LastError)
		require.Equal(t, 1, r.Attempts)
		require.Equal(t, `{"key":"charge:1"}`, string(r.Payload))
		require.Equal(t, map[string]string{"h": "charge:1"}, r.Headers)
		require.WithinDuration(t, t0.Add(-time.Hour), r.CreatedAt(), time.Millisecond)

		_, err = o.FindOutbox(ctx, &stores.FindOutboxParams{Limit: -1, States: []stores.OutboxState{"gone"}})
		require.ErrorContains(t, err, "Limit is -1")
		require.ErrorContains(t, err, `States[0] is "gone"`)
	})

	t.Run("DeleteIfStateAndRedriveTwice", func(t *testing.T) {
		o, h := opSetup(t)
		ctx := context.Background()
		ids := addRows(t, h,
			row("charge", "k1", t0, t0),
			row("charge", "k2", t0, t0),
			row("charge", "k3", t0, t0),
			row("charge", "k4", t0, t0.Add(time.Hour)), // pending
		)
		settle(t, o, map[int64]bool{ids[0]: true, ids[1]: true})

		res, err := o.DeleteOutboxIfState(ctx, &stores.DeleteOutboxParams{IDs: ids, States: []stores.OutboxState{stores.OutboxDone}})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.Deleted, "only k3 is done")
		res, err = o.DeleteOutboxIfState(ctx, &stores.DeleteOutboxParams{IDs: ids, States: []stores.OutboxState{stores.OutboxDone}})
		require.NoError(t, err)
		require.Zero(t, res.Deleted, "a second delete changes nothing")

		rd, err := o.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{IDs: []int64{ids[0]}})
		require.NoError(t, err)
		require.EqualValues(t, 1, rd.Redriven)
		rd, err = o.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{IDs: []int64{ids[0]}})
		require.NoError(t, err)
		require.Zero(t, rd.Redriven, "a second redrive changes nothing")

		res, err = o.DeleteOutboxIfState(ctx, &stores.DeleteOutboxParams{IDs: ids, States: []stores.OutboxState{stores.OutboxDead}})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.Deleted, "k2 is the only dead row left")
		left, err := o.FindOutbox(ctx, &stores.FindOutboxParams{})
		require.NoError(t, err)
		require.Len(t, left.Rows, 2)
		require.Equal(t, "k1", left.Rows[0].IdempotencyKey)
		require.Equal(t, stores.OutboxPending, left.Rows[0].State)
		require.Equal(t, "k4", left.Rows[1].IdempotencyKey)

		_, err = o.DeleteOutboxIfState(ctx, &stores.DeleteOutboxParams{States: []stores.OutboxState{stores.OutboxPending}})
		require.ErrorContains(t, err, "IDs has 0 ids")
		require.ErrorContains(t, err, "only done and dead rows can be deleted")
	})
}

// stripTimes returns s with OldestCreatedAt zeroed, for comparing counts.
func stripTimes(s []stores.OutboxKindStats) []stores.OutboxKindStats {
	out := make([]stores.OutboxKindStats, len(s))
	for i, k := range s {
		k.OldestCreatedAt = time.Time{}
		out[i] = k
	}
	return out
}
