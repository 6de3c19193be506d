package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// runInboxDeferrer checks a pipelining store's BeginInboxDeferred: the inbox
// insert sent with the transaction's first statement decides as the insert with
// its verdict read at once (InboxVerdictTx) does (first insert wins, a duplicate changes nothing, a
// rollback frees the key, concurrent deliveries apply once), and a
// duplicate's statement fails with ackgap.ErrDuplicate, its work undone.
// [Run] runs it when Harness.Pipelines is set.
func runInboxDeferrer[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx]) {
	deferrer := func(t *testing.T, h *Harness[TTx]) pendingInbox[TTx] {
		require.NoError(t, h.Exec(context.Background(), createStateTable))
		require.NoError(t, h.Exec(context.Background(), `INSERT INTO "Order ""Items""" (id, status) VALUES ('o1', 'pending')`))
		return pendingInbox[TTx]{t: t, s: h.Store}
	}
	bump := &ackgap.Transition{Table: stateTable, Key: "o1", From: []string{"pending", "charging"}, To: "charging", VersionColumn: "version"}
	version := func(t *testing.T, h *Harness[TTx]) int {
		var v int
		require.NoError(t, h.QueryRow(context.Background(), `SELECT version FROM "Order ""Items""" WHERE id = 'o1'`, &v))
		return v
	}

	t.Run("AppliedThenDuplicateUndone", func(t *testing.T) {
		h := setup(t)
		d := deferrer(t, h)
		ctx := context.Background()
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		hash := hashOf("p")
		tx, err := d.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1", PayloadHash: hash, TraceParent: tp})
		require.NoError(t, err)
		out, err := h.Store.TransitionIfStateTx(ctx, tx, bump)
		require.NoError(t, err)
		require.Equal(t, ackgap.TransitionApplied, out.Outcome)
		verdict, err := d.InboxVerdictTx(ctx, tx)
		require.NoError(t, err)
		require.False(t, verdict.Duplicate)
		require.NoError(t, h.Store.CommitTx(ctx, tx))
		require.Equal(t, 1, version(t, h))

		again, err := d.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1", PayloadHash: hashOf("other")})
		require.NoError(t, err)
		_, err = h.Store.TransitionIfStateTx(ctx, again, bump) // would apply (charging -> charging) but for the inbox
		require.ErrorIs(t, err, ackgap.ErrDuplicate)
		_, err = h.Store.TransitionIfStateTx(ctx, again, bump)
		require.ErrorIs(t, err, ackgap.ErrDuplicate, "every later statement fails too")
		verdict, err = d.InboxVerdictTx(ctx, again)
		require.NoError(t, err)
		require.True(t, verdict.Duplicate)
		require.True(t, verdict.PayloadMismatch)
		require.Equal(t, tp, verdict.TraceParent)
		require.NoError(t, h.Store.RollbackTx(ctx, again), "the duplicate's transaction is over: rollback is a no-op")
		require.Equal(t, 1, version(t, h), "the duplicate's statement was rolled back")
	})

	t.Run("VerdictWithoutStatements", func(t *testing.T) {
		h := setup(t)
		d := deferrer(t, h)
		ctx := context.Background()
		tx, err := d.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
		require.NoError(t, err)
		verdict, err := d.InboxVerdictTx(ctx, tx)
		require.NoError(t, err)
		require.False(t, verdict.Duplicate)
		_, err = insertOutbox(ctx, h.Store, tx, ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1"})
		require.NoError(t, err)
		require.NoError(t, h.Store.CommitTx(ctx, tx))
		require.Len(t, listOutbox(t, h), 1)
		require.True(t, begin(t, h, "c1", "e1", nil).Duplicate, "the inbox row committed")
	})

	t.Run("RollbackWhilePendingFreesKey", func(t *testing.T) {
		h := setup(t)
		d := deferrer(t, h)
		ctx := context.Background()
		pending, err := d.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
		require.NoError(t, err)
		require.NoError(t, h.Store.RollbackTx(ctx, pending))
		sent, err := d.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
		require.NoError(t, err)
		_, err = h.Store.TransitionIfStateTx(ctx, sent, bump)
		require.NoError(t, err)
		require.NoError(t, h.Store.RollbackTx(ctx, sent))
		require.Equal(t, 0, version(t, h))
		again := begin(t, h, "c1", "e1", nil)
		require.False(t, again.Duplicate, "both rollbacks freed the key")
		require.NoError(t, h.Store.RollbackTx(ctx, again.Tx))
	})

	t.Run("ConcurrentDeliveriesApplyOnce", func(t *testing.T) {
		h := setup(t)
		d := deferrer(t, h)
		ctx := context.Background()
		const n = 16
		applied, dupes, errs := concurrently(n, func() (bool, error) {
			tx, err := d.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
			if err != nil {
				return false, err
			}
			_, err = h.Store.TransitionIfStateTx(ctx, tx, bump)
			time.Sleep(20 * time.Millisecond) // hold the transaction so the others pile up on the key
			verdict, verr := d.InboxVerdictTx(ctx, tx)
			switch {
			case verr != nil:
				err = verr
			case verdict.Duplicate:
				return true, nil
			case err == nil:
				err = h.Store.CommitTx(ctx, tx)
			}
			if err != nil {
				_ = h.Store.RollbackTx(ctx, tx)
			}
			return false, err
		})
		require.Empty(t, errs)
		require.Equal(t, 1, applied)
		require.Equal(t, n-1, dupes)
		require.Equal(t, 1, version(t, h))
	})
}

// pendingInbox begins inbox transactions whose verdict is pending, as a
// pipelining store's BeginInboxDeferred returns them.
type pendingInbox[TTx any] struct {
	t *testing.T
	s stores.Store[TTx]
}

// BeginInboxDeferred returns the pending transaction; a verdict known at
// once fails the test, since the store claims to pipeline.
func (p pendingInbox[TTx]) BeginInboxDeferred(ctx context.Context, params *stores.BeginInboxParams) (TTx, error) {
	res, err := p.s.BeginInboxDeferred(ctx, params)
	if err != nil {
		var zero TTx
		return zero, err
	}
	require.False(p.t, res.Duplicate, "a pipelining store's verdict is pending at BeginInboxDeferred")
	return res.Tx, nil
}

func (p pendingInbox[TTx]) InboxVerdictTx(ctx context.Context, tx TTx) (*stores.BeginInboxResult[TTx], error) {
	return p.s.InboxVerdictTx(ctx, tx)
}
