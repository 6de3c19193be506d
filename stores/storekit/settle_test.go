package storekit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/storekit"
)

// TestSettleByGuardSplitsAndMerges: claimed and held rows of one call go
// to their own statement, in p's order, and come back merged in p's order,
// with the ids of claimed rows written filled in.
func TestSettleByGuardSplitsAndMerges(t *testing.T) {
	hold := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := hold.Add(-time.Minute)
	p := &stores.OutboxSettleParams{Now: now, Rows: []stores.OutboxSettlement{
		{IdempotencyKey: "h1", HeldUntil: hold, State: stores.OutboxDone},
		{ID: 7, ClaimToken: "t", State: stores.OutboxDone},
		{ID: 8, ClaimToken: "t", State: stores.OutboxDead, LastError: "400"},
		{IdempotencyKey: "h2", HeldUntil: hold, State: stores.OutboxPending, Delay: time.Second},
	}}
	var claimedSeen, heldSeen []stores.OutboxSettlement
	claimed := func(_ context.Context, q *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
		require.Equal(t, now, q.Now)
		claimedSeen = q.Rows
		return &stores.OutboxSettleResult{Changed: []bool{true, false}}, nil
	}
	held := func(_ context.Context, q *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
		require.Equal(t, now, q.Now)
		heldSeen = q.Rows
		return &stores.OutboxSettleResult{Changed: []bool{false, true}, IDs: []int64{0, 42}}, nil
	}
	res, err := storekit.SettleByGuard(context.Background(), p, claimed, held)
	require.NoError(t, err)
	require.Equal(t, []stores.OutboxSettlement{p.Rows[1], p.Rows[2]}, claimedSeen)
	require.Equal(t, []stores.OutboxSettlement{p.Rows[0], p.Rows[3]}, heldSeen)
	require.Equal(t, []bool{false, true, false, true}, res.Changed)
	require.Equal(t, []int64{0, 7, 0, 42}, res.IDs)
}

// TestSettleByGuardValidatesAndStops: an invalid call reaches no
// statement; a failed claimed statement is returned before the held one
// runs; a call of one kind runs only its statement.
func TestSettleByGuardValidatesAndStops(t *testing.T) {
	ctx := context.Background()
	never := func(context.Context, *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
		t.Fatal("no statement for an invalid call or a kind that is absent")
		return nil, nil
	}
	_, err := storekit.SettleByGuard(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
		{ID: 1, ClaimToken: "t", HeldUntil: time.Now(), State: stores.OutboxDone},
	}}, never, never)
	require.ErrorContains(t, err, "ClaimToken and HeldUntil are both set")

	boom := errors.New("boom")
	_, err = storekit.SettleByGuard(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
		{ID: 1, ClaimToken: "t", State: stores.OutboxDone},
		{IdempotencyKey: "k", HeldUntil: time.Now(), State: stores.OutboxDone},
	}}, func(context.Context, *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
		return nil, boom
	}, never)
	require.ErrorIs(t, err, boom)

	res, err := storekit.SettleByGuard(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
		{ID: 3, ClaimToken: "t", State: stores.OutboxDone},
	}}, func(context.Context, *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
		return &stores.OutboxSettleResult{Changed: []bool{true}}, nil
	}, never)
	require.NoError(t, err)
	require.Equal(t, []int64{3}, res.IDs)
}
