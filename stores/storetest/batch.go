package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// runBatch is the conformance suite of the batched mode's part of
// stores.Store (BeginInboxMany, savepoints, DeleteInboxTx,
// InsertOutboxManyTx); [Run] runs it for every store.
//
// It checks: one insert reports inserted rows, duplicates of committed
// rows and payload mismatches, and its rows commit with the transaction or
// roll back with it; params are validated; a rollback to a savepoint
// undoes one message's state change and outbox rows and keeps the others',
// DeleteInboxTx removes its inbox row so a redelivery applies it, and a
// rollback to a savepoint recovers a transaction a failed statement
// aborted; outbox rows inserted many at a time are written with every
// field, deduplicated by key and refused on a key's other payload; two
// concurrent batches sharing event ids (in opposite orders) apply each
// event exactly once and do not deadlock.
func runBatch[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx]) {
	batchStore := func(t *testing.T) (stores.Store[TTx], *Harness[TTx]) {
		t.Helper()
		h := setup(t)
		return h.Store, h
	}
	rows := inboxManyRows

	t.Run("InsertManyKeepsTraceParent", func(t *testing.T) {
		bs, h := batchStore(t)
		ctx := context.Background()
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		in := rows("e1", "e2")
		in[0].TraceParent = tp
		res, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Rows: in})
		require.NoError(t, err)
		require.NoError(t, h.Store.CommitTx(ctx, res.Tx))
		again, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Rows: rows("e1", "e2")})
		require.NoError(t, err)
		require.NoError(t, h.Store.RollbackTx(ctx, again.Tx))
		require.Equal(t, tp, again.Rows[0].TraceParent, "the traceparent of the batch that applied e1")
		require.Empty(t, again.Rows[1].TraceParent, "e2 was not traced")
		require.Equal(t, tp, begin(t, h, "c1", "e1", nil).TraceParent, "the inbox verdict reads it too")
	})

	t.Run("InsertManyReportsDuplicates", func(t *testing.T) {
		bs, h := batchStore(t)
		ctx := context.Background()
		for _, id := range []string{"e1", "e4"} {
			require.NoError(t, h.Store.CommitTx(ctx, begin(t, h, "c1", id, hashOf("payload of "+id)).Tx))
		}
		in := rows("e1", "e2", "e4", "e5")
		in[2].PayloadHash = hashOf("another payload")
		in[3].PayloadHash = nil
		res, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Rows: in})
		require.NoError(t, err)
		require.Equal(t, []stores.InboxManyOutcome{
			{Duplicate: true, StoredHash: hashOf("payload of e1")}, {},
			{Duplicate: true, PayloadMismatch: true, StoredHash: hashOf("payload of e4")}, {},
		}, res.Rows, "duplicates with the hash their rows hold")
		require.NoError(t, h.Store.CommitTx(ctx, res.Tx))
		for _, id := range []string{"e2", "e5"} {
			require.True(t, begin(t, h, "c1", id, nil).Duplicate, "%s committed with the batch", id)
		}
		other := begin(t, h, "c2", "e2", nil)
		require.False(t, other.Duplicate, "rows are scoped by consumer")
		require.NoError(t, h.Store.RollbackTx(ctx, other.Tx))
	})

	t.Run("RollbackFreesKeys", func(t *testing.T) {
		bs, h := batchStore(t)
		ctx := context.Background()
		res, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Rows: rows("e1", "e2")})
		require.NoError(t, err)
		require.NoError(t, h.Store.RollbackTx(ctx, res.Tx))
		again, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Rows: rows("e2", "e1")})
		require.NoError(t, err)
		require.Equal(t, []stores.InboxManyOutcome{{}, {}}, again.Rows, "rolled-back rows do not block the retry")
		require.NoError(t, h.Store.CommitTx(ctx, again.Tx))
		empty, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Savepoint: "b"})
		require.NoError(t, err, "no rows begins the transaction only")
		require.Empty(t, empty.Rows)
		require.NoError(t, h.Store.CommitTx(ctx, empty.Tx))
	})

	t.Run("Validation", func(t *testing.T) {
		bs, _ := batchStore(t)
		ctx := context.Background()
		_, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Rows: []stores.InboxManyRow{{EventID: "e1"}, {EventID: "e1"}, {}}})
		require.ErrorContains(t, err, "Consumer is empty")
		require.ErrorContains(t, err, `Rows[1].EventID "e1" is repeated`)
		require.ErrorContains(t, err, "Rows[2].EventID is empty")
	})

	t.Run("SavepointUndoesOneMessage", func(t *testing.T) {
		bs, h := batchStore(t)
		ctx := context.Background()
		require.NoError(t, h.Exec(ctx, createStateTable))
		require.NoError(t, h.Exec(ctx, `INSERT INTO "Order ""Items""" (id, status) VALUES ('o1', 'pending'), ('o2', 'pending')`))
		res, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Rows: rows("e1", "e2"), Savepoint: "batch"})
		require.NoError(t, err)
		tx := res.Tx
		apply := func(order, event string) {
			t.Helper()
			require.NoError(t, bs.SavepointTx(ctx, tx, "msg"))
			out, err := h.Store.TransitionIfStateTx(ctx, tx, &ackgap.Transition{
				Table: stateTable, Key: order, From: []string{"pending"}, To: "charging", VersionColumn: "version",
			})
			require.NoError(t, err)
			require.True(t, out.Applied())
			_, err = insertOutbox(ctx, h.Store, tx, ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + order, Consumer: "c1", EventID: event})
			require.NoError(t, err)
		}
		apply("o1", "e1")
		require.NoError(t, bs.ReleaseSavepointTx(ctx, tx, "msg"))
		apply("o2", "e2")
		require.NoError(t, bs.RollbackToSavepointTx(ctx, tx, "msg"))
		del, err := bs.DeleteInboxTx(ctx, tx, &stores.DeleteInboxParams{Consumer: "c1", EventIDs: []string{"e2"}})
		require.NoError(t, err)
		require.EqualValues(t, 1, del.Deleted)
		require.NoError(t, h.Store.CommitTx(ctx, tx))

		var status string
		var version int
		require.NoError(t, h.QueryRow(ctx, `SELECT status, version FROM "Order ""Items""" WHERE id = 'o1'`, &status, &version))
		require.Equal(t, []any{"charging", 1}, []any{status, version})
		require.NoError(t, h.QueryRow(ctx, `SELECT status, version FROM "Order ""Items""" WHERE id = 'o2'`, &status, &version))
		require.Equal(t, []any{"pending", 0}, []any{status, version}, "the rolled-back message changed nothing")
		out := listOutbox(t, h)
		require.Len(t, out, 1)
		require.Equal(t, "charge:o1", out[0].IdempotencyKey)
		require.True(t, begin(t, h, "c1", "e1", nil).Duplicate)
		redelivered := begin(t, h, "c1", "e2", nil)
		require.False(t, redelivered.Duplicate, "the failed message's inbox row is gone: its redelivery applies")
		require.NoError(t, h.Store.RollbackTx(ctx, redelivered.Tx))
	})

	t.Run("RollbackToSavepointRecoversFailedStatement", func(t *testing.T) {
		bs, h := batchStore(t)
		ctx := context.Background()
		require.NoError(t, h.Exec(ctx, createStateTable))
		require.NoError(t, h.Exec(ctx, `INSERT INTO "Order ""Items""" (id, status) VALUES ('o1', 'pending')`))
		res, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Rows: rows("e1", "e2")})
		require.NoError(t, err)
		tx := res.Tx
		require.NoError(t, bs.SavepointTx(ctx, tx, "msg"))
		_, err = h.Store.TransitionIfStateTx(ctx, tx, &ackgap.Transition{Table: "no_such_table", Key: "o1", From: []string{"a"}, To: "b"})
		require.Error(t, err)
		require.NoError(t, bs.RollbackToSavepointTx(ctx, tx, "msg"))
		out, err := h.Store.TransitionIfStateTx(ctx, tx, &ackgap.Transition{Table: stateTable, Key: "o1", From: []string{"pending"}, To: "charging"})
		require.NoError(t, err, "the transaction works again after the rollback to the savepoint")
		require.True(t, out.Applied())
		require.NoError(t, h.Store.CommitTx(ctx, tx))
		var status string
		require.NoError(t, h.QueryRow(ctx, `SELECT status FROM "Order ""Items""" WHERE id = 'o1'`, &status))
		require.Equal(t, "charging", status)
		require.True(t, begin(t, h, "c1", "e2", nil).Duplicate)
	})

	t.Run("InsertOutboxMany", func(t *testing.T) {
		bs, h := batchStore(t)
		ctx := context.Background()
		addRows(t, h, ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o0", Payload: []byte(`{"amount":1}`)})
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		res, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Rows: rows("e1")})
		require.NoError(t, err)
		out, err := bs.InsertOutboxManyTx(ctx, res.Tx, &stores.OutboxInsertManyParams{Rows: []ackgap.OutboxEntry{
			{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`), Headers: map[string]string{"traceparent": "00-abc-def-01"},
				AvailableAt: at, Consumer: "c1", EventID: "e1"},
			{Kind: "charge", IdempotencyKey: "charge:o0", Payload: []byte(`{"amount":1}`)},
			{Kind: "email.receipt", IdempotencyKey: "receipt:o1"},
			{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`)},
		}})
		require.NoError(t, err)
		require.Equal(t, []bool{false, true, false, true}, out.Duplicate)
		_, err = bs.InsertOutboxManyTx(ctx, res.Tx, &stores.OutboxInsertManyParams{Rows: []ackgap.OutboxEntry{{Kind: "", IdempotencyKey: "k"}}})
		require.ErrorContains(t, err, "Rows[0]: invalid outbox row: Kind is empty")
		_, err = bs.InsertOutboxManyTx(ctx, res.Tx, &stores.OutboxInsertManyParams{Rows: []ackgap.OutboxEntry{
			{Kind: "charge", IdempotencyKey: "charge:o9", Payload: []byte("a")}, {Kind: "charge", IdempotencyKey: "charge:o9", Payload: []byte("b")},
		}})
		require.ErrorIs(t, err, ackgap.ErrIdempotencyConflict, "the same key twice in one call with two payloads")
		require.NoError(t, bs.SavepointTx(ctx, res.Tx, "msg"))
		_, err = bs.InsertOutboxManyTx(ctx, res.Tx, &stores.OutboxInsertManyParams{Rows: []ackgap.OutboxEntry{
			{Kind: "charge", IdempotencyKey: "charge:o2", Payload: []byte("x")}, {Kind: "charge", IdempotencyKey: "charge:o0", Payload: []byte(`{"amount":2}`)},
		}})
		require.ErrorIs(t, err, ackgap.ErrIdempotencyConflict, "a stored key with another payload")
		require.True(t, ackgap.IsPermanent(err))
		require.NoError(t, bs.RollbackToSavepointTx(ctx, res.Tx, "msg"))
		require.NoError(t, h.Store.CommitTx(ctx, res.Tx))

		got := listOutbox(t, h)
		require.Len(t, got, 3, "charge:o0 before, charge:o1 and receipt:o1; charge:o2 rolled back with its statement")
		r := got[1]
		require.Equal(t, []any{"charge", "charge:o1", `{"amount":100}`, "c1", "e1", stores.OutboxPending, 0},
			[]any{r.Kind, r.IdempotencyKey, string(r.Payload), r.Consumer, r.EventID, r.State, r.Attempts})
		require.Equal(t, map[string]string{"traceparent": "00-abc-def-01"}, r.Headers)
		require.WithinDuration(t, at, r.AvailableAt, time.Millisecond)
		require.Equal(t, "receipt:o1", got[2].IdempotencyKey)
		require.Empty(t, got[2].Payload)
		require.WithinDuration(t, time.Now(), got[2].AvailableAt, time.Minute, "AvailableAt defaults to now")
	})

	t.Run("ConcurrentBatchesApplyOnce", func(t *testing.T) {
		bs, h := batchStore(t)
		ctx := context.Background()
		require.NoError(t, h.Exec(ctx, createStateTable))
		const events = 6
		for i := range events {
			require.NoError(t, h.Exec(ctx, fmt.Sprintf(`INSERT INTO "Order ""Items""" (id, status) VALUES ('e%d', 'open')`, i)))
		}
		// Eight batches of the same six events, half of them in reverse
		// order: every event applies once, and no batch deadlocks.
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			applied = map[string]int{}
			errs    []error
		)
		start := make(chan struct{})
		for b := range 8 {
			ids := make([]string, events)
			for i := range ids {
				n := i
				if b%2 == 1 {
					n = events - 1 - i
				}
				ids[i] = fmt.Sprintf("e%d", n)
			}
			wg.Go(func() {
				<-start
				var mine []string
				// A busy database (SQLite's write lock held past its busy
				// timeout on a loaded machine) is a redelivery, as a broker
				// would make it, never a failure of the batch's own.
				var err error
				for attempt := 0; attempt == 0 || errors.Is(err, ackgap.ErrStoreUnavailable) && attempt < 20; attempt++ {
					mine, err = applyBatch(ctx, h, bs, ids)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				for _, id := range mine {
					applied[id]++
				}
			})
		}
		close(start)
		wg.Wait()
		require.Empty(t, errs)
		for i := range events {
			id := fmt.Sprintf("e%d", i)
			require.Equal(t, 1, applied[id], "event %s applied by exactly one batch", id)
			var version int
			require.NoError(t, h.QueryRow(ctx, fmt.Sprintf(`SELECT version FROM "Order ""Items""" WHERE id = '%s'`, id), &version))
			require.Equal(t, 1, version)
		}
	})
}

// inboxManyRows returns the inbox rows of ids, each with a payload hash
// of its own.
func inboxManyRows(ids ...string) []stores.InboxManyRow {
	out := make([]stores.InboxManyRow, len(ids))
	for i, id := range ids {
		out[i] = stores.InboxManyRow{EventID: id, PayloadHash: hashOf("payload of " + id)}
	}
	return out
}

// applyBatch begins an inbox batch of ids, applies the transition of each
// id that is not a duplicate, holds the keys a while and commits; it
// returns the ids it applied.
func applyBatch[TTx any](ctx context.Context, h *Harness[TTx], bs stores.Store[TTx], ids []string) ([]string, error) {
	res, err := bs.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c1", Rows: inboxManyRows(ids...)})
	if err != nil {
		return nil, err
	}
	var mine []string
	for i, r := range res.Rows {
		if r.Duplicate {
			continue
		}
		if _, err = h.Store.TransitionIfStateTx(ctx, res.Tx, &ackgap.Transition{
			Table: stateTable, Key: ids[i], From: []string{"open"}, To: "open", VersionColumn: "version",
		}); err != nil {
			_ = h.Store.RollbackTx(ctx, res.Tx)
			return nil, err
		}
		mine = append(mine, ids[i])
	}
	time.Sleep(20 * time.Millisecond) // hold the keys so the other batches pile up on them
	if err := h.Store.CommitTx(ctx, res.Tx); err != nil {
		return nil, err
	}
	return mine, nil
}
