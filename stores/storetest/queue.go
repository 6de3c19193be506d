package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// runOutboxQueuer is the conformance suite of stores.Store.QueueOutboxTx
// on a store that pipelines (pgxstore); [Run] runs it when
// Harness.Pipelines is set.
//
// It checks: queued rows are committed with their transaction, with every
// field; a queued row whose key exists with the same payload is a
// duplicate and writes nothing; with another payload (committed before,
// or queued twice in one transaction) the commit fails with a permanent
// ackgap.ErrIdempotencyConflict and nothing of the transaction remains,
// inbox row included; a rollback discards queued rows; params are
// validated when queued.
func runOutboxQueuer[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx]) {
	queuer := func(t *testing.T) (stores.Store[TTx], *Harness[TTx]) {
		t.Helper()
		h := setup(t)
		return h.Store, h
	}

	t.Run("QueuedRowsCommit", func(t *testing.T) {
		q, h := queuer(t)
		ctx := context.Background()
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		res := begin(t, h, "c1", "e1", nil)
		require.NoError(t, q.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{
			Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`),
			Headers: map[string]string{"traceparent": "00-abc-def-01"}, AvailableAt: at, Consumer: "c1", EventID: "e1",
		}))
		require.NoError(t, q.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "email.receipt", IdempotencyKey: "receipt:o1"}))
		require.NoError(t, h.Store.CommitTx(ctx, res.Tx))

		rows := listOutbox(t, h)
		require.Len(t, rows, 2)
		r := rows[0]
		require.Equal(t, []any{"charge", "charge:o1", `{"amount":100}`, "c1", "e1", stores.OutboxPending, 0},
			[]any{r.Kind, r.IdempotencyKey, string(r.Payload), r.Consumer, r.EventID, r.State, r.Attempts})
		require.Equal(t, map[string]string{"traceparent": "00-abc-def-01"}, r.Headers)
		require.WithinDuration(t, at, r.AvailableAt, time.Millisecond)
		require.Equal(t, "receipt:o1", rows[1].IdempotencyKey)
		require.Empty(t, rows[1].Payload, "an empty payload is allowed")
		require.True(t, begin(t, h, "c1", "e1", nil).Duplicate, "the inbox row committed with them")
	})

	t.Run("QueuedDuplicateWritesNothing", func(t *testing.T) {
		q, h := queuer(t)
		ctx := context.Background()
		addRows(t, h, ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`)})
		res := begin(t, h, "c1", "e2", nil)
		require.NoError(t, q.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`)}))
		require.NoError(t, q.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o2", Payload: []byte(`{"amount":7}`)}))
		require.NoError(t, q.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o2", Payload: []byte(`{"amount":7}`)}))
		require.NoError(t, h.Store.CommitTx(ctx, res.Tx), "the same key with the same payload is a duplicate, not an error")
		rows := listOutbox(t, h)
		require.Len(t, rows, 2)
		require.Equal(t, "", rows[0].EventID, "the existing row was left as it was")
	})

	conflict := func(t *testing.T, before []ackgap.OutboxEntry, queued ...ackgap.OutboxEntry) {
		t.Helper()
		q, h := queuer(t)
		ctx := context.Background()
		require.NoError(t, h.Exec(ctx, createStateTable))
		require.NoError(t, h.Exec(ctx, `INSERT INTO "Order ""Items""" (id, status) VALUES ('o1', 'pending')`))
		if len(before) > 0 {
			addRows(t, h, before...)
		}
		res := begin(t, h, "c1", "e1", nil)
		out, err := h.Store.TransitionIfStateTx(ctx, res.Tx, &ackgap.Transition{Table: stateTable, Key: "o1", From: []string{"pending"}, To: "charging"})
		require.NoError(t, err)
		require.Equal(t, ackgap.TransitionApplied, out.Outcome)
		// The contract lets the conflict fail the call (a store that sees it
		// among its own unsent rows) or the commit.
		for i := range queued {
			if err = q.QueueOutboxTx(ctx, res.Tx, &queued[i]); err != nil {
				break
			}
		}
		if err == nil {
			err = h.Store.CommitTx(ctx, res.Tx)
		}
		require.ErrorIs(t, err, ackgap.ErrIdempotencyConflict)
		require.True(t, ackgap.IsPermanent(err))
		require.Equal(t, ackgap.ReasonIdempotencyConflict, ackgap.ReasonOf(err))
		require.NoError(t, h.Store.RollbackTx(ctx, res.Tx), "rolling back after the failed commit is a no-op")

		var status string
		require.NoError(t, h.QueryRow(ctx, `SELECT status FROM "Order ""Items""" WHERE id = 'o1'`, &status))
		require.Equal(t, "pending", status, "the transition rolled back")
		require.Len(t, listOutbox(t, h), len(before), "no queued row remains")
		again := begin(t, h, "c1", "e1", nil)
		require.False(t, again.Duplicate, "the inbox row rolled back: a redrive processes the event again")
		require.NoError(t, h.Store.RollbackTx(ctx, again.Tx))
	}
	t.Run("QueuedConflictWithCommittedRowFailsCommit", func(t *testing.T) {
		conflict(t, []ackgap.OutboxEntry{{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`)}},
			ackgap.OutboxEntry{Kind: "email.receipt", IdempotencyKey: "receipt:o1", Payload: []byte(`{}`)},
			ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":250}`)})
	})
	t.Run("QueuedConflictWithinTransactionFailsCommit", func(t *testing.T) {
		conflict(t, nil,
			ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`)},
			ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":250}`)})
	})

	t.Run("RollbackDiscardsQueuedRows", func(t *testing.T) {
		q, h := queuer(t)
		ctx := context.Background()
		res := begin(t, h, "c1", "e1", nil)
		require.NoError(t, q.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1"}))
		require.NoError(t, h.Store.RollbackTx(ctx, res.Tx))
		require.Empty(t, listOutbox(t, h))
		again := begin(t, h, "c1", "e1", nil)
		require.False(t, again.Duplicate)
		require.NoError(t, h.Store.CommitTx(ctx, again.Tx))
		require.Empty(t, listOutbox(t, h), "nothing queued before the rollback comes back")
	})

	t.Run("ValidatedWhenQueued", func(t *testing.T) {
		q, h := queuer(t)
		ctx := context.Background()
		res := begin(t, h, "c1", "e1", nil)
		defer func() { _ = h.Store.RollbackTx(ctx, res.Tx) }()
		err := q.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{})
		require.ErrorContains(t, err, "Kind is empty")
		require.ErrorContains(t, err, "IdempotencyKey is empty")
	})
}
