// Package storetest is the conformance suite every ackgap store passes
// (docs/design.md invariant 9). A store's test runs it with a harness that
// gives the suite a fresh, migrated store per subtest:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) *storetest.Harness[pgx.Tx] {
//			pool, _ := testdb.Schema(t, 0)
//			store, _ := pgxstore.New(pool, nil)
//			return &storetest.Harness[pgx.Tx]{Store: store, Exec: ..., QueryRow: ...}
//		})
//	}
//
// It checks: the first inbox insert wins; a duplicate is a result, not an
// error; a rollback frees the key; rows are scoped by consumer; 16
// concurrent deliveries of one event apply exactly once; payload-hash
// mismatches are reported; guarded transitions apply, report already
// applied and refuse; guarded changes on any column (a guard with a bound
// value, a set relative to the current value, a quoted column name) keep
// those outcomes, run at once and queued; outbox rows are written, deduplicated by idempotency
// key and rolled back with their transaction; pruning deletes by age;
// migrations go down and up again.
package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// Harness is what the suite needs from a store under test.
type Harness[TTx any] struct {
	// Store is fresh and already migrated to the newest version.
	Store stores.Store[TTx]
	// Exec runs one statement outside any transaction in the store's
	// database (the suite sends only literal SQL, no parameters).
	Exec func(ctx context.Context, sql string) error
	// QueryRow runs a one-row query and scans it into dest.
	QueryRow func(ctx context.Context, sql string, dest ...any) error
	// Pipelines says the store pipelines: its BeginInboxDeferred leaves
	// the verdict pending until the first statement, and QueueOutboxTx
	// holds rows back until the next statement or the commit (pgxstore).
	// [Run] then also checks those; a store that resolves at once
	// (storekit helpers) leaves it false.
	Pipelines bool
}

// stateTable is created by the suite; its name needs quoting, which checks
// that stores quote identifiers.
const stateTable = `Order "Items"`

const createStateTable = `CREATE TABLE "Order ""Items""" (id VARCHAR(255) PRIMARY KEY, status VARCHAR(32) NOT NULL, version INTEGER NOT NULL DEFAULT 0, note TEXT NOT NULL DEFAULT '')`

// Run runs every part of the suite that applies to the store setup
// returns, each as a subtest; setup is called once per subtest (and once
// more to see what the store implements):
//
//   - Inbox, for every store (the checks listed in the package doc);
//   - Outbox, when the store implements stores.OutboxStore (the relay's
//     claims, leases, retries, dead rows, redrive, pruning, stats);
//   - Batch, for every store (multi-row inbox inserts, savepoints, outbox
//     rows many at a time, concurrent batches);
//   - QueuedOutbox, when Harness.Pipelines is set (queued outbox rows
//     commit, deduplicate and fail with their transaction);
//   - DeferredInbox, when Harness.Pipelines is set (the deferred inbox
//     insert decides as an eager one does; a duplicate's statement fails
//     with ackgap.ErrDuplicate).
//
// A part the store does not implement is skipped with the reason, so a new
// store's one test shows what it does not offer yet.
func Run[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx]) {
	probe := setup(t)
	part := func(name string, offered bool, run func(*testing.T, func(*testing.T) *Harness[TTx])) {
		t.Run(name, func(t *testing.T) {
			if !offered {
				t.Skipf("%T does not offer %s", probe.Store, name)
			}
			run(t, setup)
		})
	}
	part("Inbox", true, runInbox[TTx])
	_, ok := probe.Store.(stores.OutboxStore)
	part("OutboxStore", ok, runOutbox[TTx])
	part("Batch", true, runBatch[TTx])
	_, ok = probe.Store.(stores.Operator)
	part("Operator", ok, runOperator[TTx])
	part("QueuedOutbox", probe.Pipelines, runOutboxQueuer[TTx])
	part("DeferredInbox", probe.Pipelines, runInboxDeferrer[TTx])
}

// runInbox is the part of the suite every store passes.
func runInbox[TTx any](t *testing.T, setup func(t *testing.T) *Harness[TTx]) {
	t.Run("FirstInsertWinsDuplicateIsResult", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		first := begin(t, h, "c1", "e1", hashOf("p"))
		require.False(t, first.Duplicate)
		require.NoError(t, h.Store.CommitTx(ctx, first.Tx))

		second, err := beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1", PayloadHash: hashOf("p")})
		require.NoError(t, err, "a duplicate is a result, not an error")
		require.True(t, second.Duplicate)
		require.False(t, second.PayloadMismatch)
	})

	t.Run("RollbackFreesKey", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		first := begin(t, h, "c1", "e1", nil)
		require.False(t, first.Duplicate)
		require.NoError(t, h.Store.RollbackTx(ctx, first.Tx))
		require.NoError(t, h.Store.RollbackTx(ctx, first.Tx), "second rollback is a no-op")

		again := begin(t, h, "c1", "e1", nil)
		require.False(t, again.Duplicate, "a rolled-back inbox row must not block the retry")
		require.NoError(t, h.Store.CommitTx(ctx, again.Tx))
	})

	t.Run("DuplicateReturnsFirstTraceParent", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		first, err := beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1", TraceParent: tp})
		require.NoError(t, err)
		require.NoError(t, h.Store.CommitTx(ctx, first.Tx))
		second, err := beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1",
			TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
		require.NoError(t, err)
		require.True(t, second.Duplicate)
		require.Equal(t, tp, second.TraceParent, "the trace context of the delivery that applied the event")
		require.NoError(t, h.Store.CommitTx(ctx, begin(t, h, "c1", "untraced", nil).Tx))
		require.Empty(t, begin(t, h, "c1", "untraced", nil).TraceParent)
	})

	t.Run("ConsumerScoping", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		a := begin(t, h, "c1", "e1", nil)
		require.NoError(t, h.Store.CommitTx(ctx, a.Tx))
		b := begin(t, h, "c2", "e1", nil)
		require.False(t, b.Duplicate, "another consumer processes the event too")
		require.NoError(t, h.Store.CommitTx(ctx, b.Tx))
		require.True(t, begin(t, h, "c2", "e1", nil).Duplicate)
	})

	t.Run("PayloadMismatch", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		require.NoError(t, h.Store.CommitTx(ctx, begin(t, h, "c1", "e1", hashOf("amount=100")).Tx))
		other := begin(t, h, "c1", "e1", hashOf("amount=250"))
		require.True(t, other.Duplicate)
		require.True(t, other.PayloadMismatch)
		same := begin(t, h, "c1", "e1", hashOf("amount=100"))
		require.True(t, same.Duplicate)
		require.False(t, same.PayloadMismatch)
		unhashed := begin(t, h, "c1", "e1", nil)
		require.True(t, unhashed.Duplicate)
		require.False(t, unhashed.PayloadMismatch, "no hash given, nothing to compare")
	})

	t.Run("ConcurrentDeliveriesApplyOnce", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		require.NoError(t, h.Exec(ctx, createStateTable))
		require.NoError(t, h.Exec(ctx, `INSERT INTO "Order ""Items""" (id, status) VALUES ('o1', 'open')`))

		const n = 16
		applied, dupes, errs := concurrently(n, func() (bool, error) {
			res, err := beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
			if err != nil || res.Duplicate {
				return err == nil, err
			}
			// Bump the version whatever the state: only the inbox stands
			// between this change and a double apply.
			_, err = h.Store.TransitionIfStateTx(ctx, res.Tx, &ackgap.Transition{
				Table: stateTable, Key: "o1", From: []string{"open"}, To: "open", VersionColumn: "version",
			})
			time.Sleep(20 * time.Millisecond) // hold the transaction so the others pile up on the key
			if err == nil {
				err = h.Store.CommitTx(ctx, res.Tx)
			} else {
				_ = h.Store.RollbackTx(ctx, res.Tx)
			}
			return false, err
		})
		require.Empty(t, errs)
		require.Equal(t, 1, applied)
		require.Equal(t, n-1, dupes)
		var version int
		require.NoError(t, h.QueryRow(ctx, `SELECT version FROM "Order ""Items""" WHERE id = 'o1'`, &version))
		require.Equal(t, 1, version)
	})

	t.Run("PruneByAge", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		now := time.Now()
		old := now.Add(-10 * 24 * time.Hour)
		for _, k := range []struct {
			consumer, id string
			at           time.Time
		}{{"c1", "old1", old}, {"c1", "old2", old}, {"c2", "old3", old}, {"c1", "new", now}} {
			res, err := beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: k.consumer, EventID: k.id, Now: k.at})
			require.NoError(t, err)
			require.NoError(t, h.Store.CommitTx(ctx, res.Tx))
		}
		cutoff := now.Add(-24 * time.Hour)
		res, err := operator(t, h).PruneInbox(ctx, &stores.PruneInboxParams{Before: cutoff, Consumer: "c2"})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.Deleted, "consumer-scoped prune")
		res, err = operator(t, h).PruneInbox(ctx, &stores.PruneInboxParams{Before: cutoff, Limit: 1})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.Deleted, "limit caps one call")
		res, err = operator(t, h).PruneInbox(ctx, &stores.PruneInboxParams{Before: cutoff})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.Deleted)
		for _, id := range []string{"old1", "old2"} {
			r := begin(t, h, "c1", id, nil)
			require.False(t, r.Duplicate, "pruned row %s is gone", id)
			require.NoError(t, h.Store.RollbackTx(ctx, r.Tx))
		}
		require.True(t, begin(t, h, "c1", "new", nil).Duplicate, "a recent row survives")
		_, err = operator(t, h).PruneInbox(ctx, &stores.PruneInboxParams{})
		require.Error(t, err, "a zero Before is refused, not 'delete everything'")
	})

	t.Run("GuardedTransition", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		require.NoError(t, h.Exec(ctx, createStateTable))
		require.NoError(t, h.Exec(ctx, `INSERT INTO "Order ""Items""" (id, status) VALUES ('o1', 'pending'), ('o2', 'cancelled'), ('x'' OR ''1''=''1', 'pending')`))
		tr := func(key string) *ackgap.TransitionResult {
			res := begin(t, h, "c1", "e-"+key+time.Now().String(), nil)
			out, err := h.Store.TransitionIfStateTx(ctx, res.Tx, &ackgap.Transition{
				Table: stateTable, Key: key, From: []string{"pending"}, To: "charging",
				Set: []ackgap.Assignment{{Column: "note", Value: "by " + key}}, VersionColumn: "version",
			})
			require.NoError(t, err)
			require.NoError(t, h.Store.CommitTx(ctx, res.Tx))
			return out
		}
		require.Equal(t, &ackgap.TransitionResult{Outcome: ackgap.TransitionApplied, Found: true, Previous: "pending"}, tr("o1"))
		already := tr("o1")
		require.Equal(t, ackgap.TransitionAlreadyApplied, already.Outcome)
		require.NoError(t, already.Err())
		refused := tr("o2")
		require.Equal(t, &ackgap.TransitionResult{Outcome: ackgap.TransitionRefused, Found: true, Previous: "cancelled"}, refused)
		require.ErrorIs(t, refused.Err(), ackgap.ErrTransitionRefused)
		require.True(t, ackgap.IsPermanent(refused.Err()))
		missing := tr("nope")
		require.Equal(t, ackgap.TransitionRefused, missing.Outcome)
		require.False(t, missing.Found)
		require.ErrorIs(t, missing.Err(), ackgap.ErrTransitionRefused)

		var status, note string
		var version int
		require.NoError(t, h.QueryRow(ctx, `SELECT status, version, note FROM "Order ""Items""" WHERE id = 'o1'`, &status, &version, &note))
		require.Equal(t, []any{"charging", 1, "by o1"}, []any{status, version, note})
		require.NoError(t, h.QueryRow(ctx, `SELECT status, version FROM "Order ""Items""" WHERE id = 'o2'`, &status, &version))
		require.Equal(t, []any{"cancelled", 0}, []any{status, version}, "a refused transition writes nothing")
		var pending int
		require.NoError(t, h.QueryRow(ctx, `SELECT count(*) FROM "Order ""Items""" WHERE status = 'pending'`, &pending))
		require.Equal(t, 1, pending, "the key is bound as a value, not spliced into SQL")

		res := begin(t, h, "c1", "invalid", nil)
		defer func() { _ = h.Store.RollbackTx(ctx, res.Tx) }()
		_, err := h.Store.TransitionIfStateTx(ctx, res.Tx, &ackgap.Transition{Table: stateTable, Key: "o1", To: "x"})
		require.ErrorContains(t, err, "From is empty")
	})

	t.Run("GuardedChange", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		require.NoError(t, h.Exec(ctx, `CREATE TABLE "Stock ""Items""" (sku VARCHAR(255) PRIMARY KEY, "on hand" INTEGER NOT NULL, version INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'open')`))
		require.NoError(t, h.Exec(ctx, `INSERT INTO "Stock ""Items""" (sku, "on hand") VALUES ('s1', 5)`))
		const table = `Stock "Items"`
		tr := func(p *ackgap.Transition) *ackgap.TransitionResult {
			t.Helper()
			p.Table, p.KeyColumn = table, "sku"
			res := begin(t, h, "c1", "e-"+time.Now().String(), nil)
			out, err := h.Store.TransitionIfStateTx(ctx, res.Tx, p)
			require.NoError(t, err)
			require.NoError(t, h.Store.CommitTx(ctx, res.Tx))
			return out
		}
		row := func() (onHand, version int, status string) {
			t.Helper()
			require.NoError(t, h.QueryRow(ctx, `SELECT "on hand", version, status FROM "Stock ""Items""" WHERE sku = 's1'`, &onHand, &version, &status))
			return onHand, version, status
		}
		reserve := func(n int) *ackgap.Transition {
			return &ackgap.Transition{Key: "s1",
				Guards: []ackgap.Guard{{Column: "on hand", Op: ackgap.GuardGreaterOrEqual, Value: n}},
				Set:    []ackgap.Assignment{{Column: "on hand", Op: ackgap.SetSubtract, Value: n}}, VersionColumn: "version"}
		}

		require.Equal(t, &ackgap.TransitionResult{Outcome: ackgap.TransitionApplied, Found: true}, tr(reserve(3)), "stock >= 3: take 3")
		onHand, version, _ := row()
		require.Equal(t, []int{2, 1}, []int{onHand, version})
		refused := tr(reserve(3))
		require.Equal(t, &ackgap.TransitionResult{Outcome: ackgap.TransitionRefused, Found: true}, refused, "stock 2 < 3: refused, never already applied")
		require.ErrorIs(t, refused.Err(), ackgap.ErrTransitionRefused)
		require.True(t, ackgap.IsPermanent(refused.Err()))
		missing := reserve(1)
		missing.Key = "nope"
		require.Equal(t, &ackgap.TransitionResult{Outcome: ackgap.TransitionRefused}, tr(missing))
		onHand, version, _ = row()
		require.Equal(t, []int{2, 1}, []int{onHand, version}, "a refused change writes nothing")

		// Optimistic concurrency: version = v, and a set relative to the
		// current value.
		restock := func(v int) *ackgap.Transition {
			return &ackgap.Transition{Key: "s1",
				Guards: []ackgap.Guard{{Column: "version", Op: ackgap.GuardEqual, Value: v}},
				Set:    []ackgap.Assignment{{Column: "on hand", Op: ackgap.SetAdd, Value: 10}}, VersionColumn: "version"}
		}
		require.Equal(t, ackgap.TransitionRefused, tr(restock(0)).Outcome, "a stale version is refused")
		require.Equal(t, ackgap.TransitionApplied, tr(restock(1)).Outcome)
		onHand, version, _ = row()
		require.Equal(t, []int{12, 2}, []int{onHand, version})

		// A state guard and a column guard together keep the three outcomes.
		closeIf := func(min int) *ackgap.Transition {
			return &ackgap.Transition{Key: "s1", From: []string{"open"}, To: "closed",
				Guards: []ackgap.Guard{{Column: "on hand", Op: ackgap.GuardGreater, Value: min}}}
		}
		require.Equal(t, &ackgap.TransitionResult{Outcome: ackgap.TransitionRefused, Found: true, Previous: "open"}, tr(closeIf(100)))
		require.Equal(t, ackgap.TransitionApplied, tr(closeIf(1)).Outcome)
		require.Equal(t, ackgap.TransitionAlreadyApplied, tr(closeIf(1)).Outcome)

		// The queued form: applied with its rows, refused fails the
		// transaction (at once, with the statement that carries it, or at
		// the commit) and leaves nothing.
		res := begin(t, h, "c1", "queued-1", nil)
		q := &stores.QueueTransitionParams{Transition: *reserve(2), Outbox: []ackgap.OutboxEntry{{Kind: "reserved", IdempotencyKey: "reserved:s1:2"}}}
		q.Transition.Table, q.Transition.KeyColumn = table, "sku"
		require.NoError(t, h.Store.QueueTransitionTx(ctx, res.Tx, q))
		require.NoError(t, h.Store.CommitTx(ctx, res.Tx))
		onHand, version, _ = row()
		require.Equal(t, []int{10, 3}, []int{onHand, version})
		require.Len(t, listOutbox(t, h), 1)

		res = begin(t, h, "c1", "queued-2", nil)
		q = &stores.QueueTransitionParams{Transition: *reserve(11), Outbox: []ackgap.OutboxEntry{{Kind: "reserved", IdempotencyKey: "reserved:s1:11"}}}
		q.Transition.Table, q.Transition.KeyColumn = table, "sku"
		err := h.Store.QueueTransitionTx(ctx, res.Tx, q)
		if err == nil {
			err = h.Store.CommitTx(ctx, res.Tx)
		}
		require.ErrorIs(t, err, ackgap.ErrTransitionRefused)
		require.NoError(t, h.Store.RollbackTx(ctx, res.Tx))
		onHand, version, _ = row()
		require.Equal(t, []int{10, 3}, []int{onHand, version})
		require.Len(t, listOutbox(t, h), 1, "no row for a refused change")

		res = begin(t, h, "c1", "invalid", nil)
		defer func() { _ = h.Store.RollbackTx(ctx, res.Tx) }()
		_, err = h.Store.TransitionIfStateTx(ctx, res.Tx, &ackgap.Transition{Table: table, Key: "s1",
			Guards: []ackgap.Guard{{Column: "on hand", Op: "LIKE", Value: 1}}, Set: []ackgap.Assignment{{Column: "on hand", Op: "*", Value: 2}}})
		require.ErrorContains(t, err, "Guards[0].Op")
		require.ErrorContains(t, err, "Set[0].Op")
		_, err = h.Store.TransitionIfStateTx(ctx, res.Tx, &ackgap.Transition{Table: table, Key: "s1", Set: []ackgap.Assignment{{Column: "status", Value: "x"}}})
		require.ErrorContains(t, err, "needs a guard")
	})

	t.Run("TransitionRolledBackWithInbox", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		require.NoError(t, h.Exec(ctx, createStateTable))
		require.NoError(t, h.Exec(ctx, `INSERT INTO "Order ""Items""" (id, status) VALUES ('o1', 'pending')`))
		res := begin(t, h, "c1", "e1", nil)
		out, err := h.Store.TransitionIfStateTx(ctx, res.Tx, &ackgap.Transition{Table: stateTable, Key: "o1", From: []string{"pending"}, To: "charging"})
		require.NoError(t, err)
		require.Equal(t, ackgap.TransitionApplied, out.Outcome)
		_, err = insertOutbox(ctx, h.Store, res.Tx, ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte("{}")})
		require.NoError(t, err)
		require.NoError(t, h.Store.RollbackTx(ctx, res.Tx))

		var status string
		require.NoError(t, h.QueryRow(ctx, `SELECT status FROM "Order ""Items""" WHERE id = 'o1'`, &status))
		require.Equal(t, "pending", status)
		require.Empty(t, listOutbox(t, h), "outbox rows roll back with the transaction")
		again := begin(t, h, "c1", "e1", nil)
		require.False(t, again.Duplicate, "the inbox row rolled back too")
		require.NoError(t, h.Store.RollbackTx(ctx, again.Tx))
	})

	t.Run("Outbox", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		res := begin(t, h, "c1", "e1", nil)
		dup, err := insertOutbox(ctx, h.Store, res.Tx, ackgap.OutboxEntry{
			Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`),
			Headers: map[string]string{"traceparent": "00-abc-def-01"}, AvailableAt: at, Consumer: "c1", EventID: "e1",
		})
		require.NoError(t, err)
		require.False(t, dup)
		dup, err = insertOutbox(ctx, h.Store, res.Tx, ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`)})
		require.NoError(t, err)
		require.True(t, dup, "same key, same payload: a duplicate, nothing written")
		_, err = insertOutbox(ctx, h.Store, res.Tx, ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":250}`)})
		require.ErrorIs(t, err, ackgap.ErrIdempotencyConflict)
		require.Equal(t, ackgap.ReasonIdempotencyConflict, ackgap.ReasonOf(err))
		_, err = insertOutbox(ctx, h.Store, res.Tx, ackgap.OutboxEntry{Kind: "email.receipt", IdempotencyKey: "receipt:o1"})
		require.NoError(t, err, "an empty payload is allowed")
		_, err = insertOutbox(ctx, h.Store, res.Tx, ackgap.OutboxEntry{Kind: "", IdempotencyKey: ""})
		require.ErrorContains(t, err, "Kind is empty")
		require.ErrorContains(t, err, "IdempotencyKey is empty")
		require.NoError(t, h.Store.CommitTx(ctx, res.Tx))

		rows := listOutbox(t, h)
		require.Len(t, rows, 2)
		r := rows[0]
		require.Equal(t, []any{"charge", "charge:o1", `{"amount":100}`, "c1", "e1", stores.OutboxPending, 0},
			[]any{r.Kind, r.IdempotencyKey, string(r.Payload), r.Consumer, r.EventID, r.State, r.Attempts})
		require.Equal(t, map[string]string{"traceparent": "00-abc-def-01"}, r.Headers)
		require.WithinDuration(t, at, r.AvailableAt, time.Millisecond)
		require.WithinDuration(t, time.Now(), rows[1].AvailableAt, time.Minute, "AvailableAt defaults to now")
		charges, err := outboxOf(t, h).ListOutbox(ctx, &stores.OutboxListParams{Kind: "charge"})
		require.NoError(t, err)
		require.Len(t, charges.Rows, 1)
	})

	t.Run("MigrateDownAndUp", func(t *testing.T) {
		h := setup(t)
		ctx := context.Background()
		again, err := operator(t, h).Migrate(ctx, &stores.MigrateParams{})
		require.NoError(t, err)
		require.Empty(t, again.Applied, "migrating an up-to-date store applies nothing")
		newest := again.Version
		require.Positive(t, newest)
		down, err := operator(t, h).Migrate(ctx, &stores.MigrateParams{Down: true})
		require.NoError(t, err)
		require.Equal(t, 0, down.Version)
		require.Len(t, down.Applied, newest)
		_, err = beginInbox(ctx, h.Store, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
		require.Error(t, err, "no inbox table after migrating down")
		up, err := operator(t, h).Migrate(ctx, &stores.MigrateParams{})
		require.NoError(t, err)
		require.Equal(t, newest, up.Version)
		r := begin(t, h, "c1", "e1", nil)
		require.NoError(t, h.Store.CommitTx(ctx, r.Tx))
		_, err = operator(t, h).Migrate(ctx, &stores.MigrateParams{TargetVersion: newest + 1})
		require.Error(t, err)
	})
}

// concurrently runs deliver n times at once, released together, and
// tallies what the deliveries did: applied (no error, not a duplicate),
// duplicates, and errors.
func concurrently(n int, deliver func() (duplicate bool, err error)) (applied, dupes int, errs []error) {
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		mu    sync.Mutex
	)
	for range n {
		wg.Go(func() {
			<-start
			dup, err := deliver()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case dup:
				dupes++
			default:
				applied++
			}
		})
	}
	close(start)
	wg.Wait()
	return applied, dupes, errs
}

func begin[TTx any](t *testing.T, h *Harness[TTx], consumer, eventID string, hash []byte) *stores.BeginInboxResult[TTx] {
	t.Helper()
	res, err := beginInbox(context.Background(), h.Store, &stores.BeginInboxParams{Consumer: consumer, EventID: eventID, PayloadHash: hash})
	require.NoError(t, err)
	return res
}

func listOutbox[TTx any](t *testing.T, h *Harness[TTx]) []stores.OutboxRow {
	t.Helper()
	res, err := outboxOf(t, h).ListOutbox(context.Background(), &stores.OutboxListParams{})
	require.NoError(t, err)
	return res.Rows
}

func hashOf(s string) []byte { return stores.PayloadHash([]byte(s)) }

// beginInbox begins s's inbox transaction for p and returns its verdict at
// once (BeginInboxDeferred, then InboxVerdictTx): a duplicate is known on
// return, as the middleware learns it before the handler's outcome counts.
func beginInbox[TTx any](ctx context.Context, s stores.Store[TTx], p *stores.BeginInboxParams) (*stores.BeginInboxResult[TTx], error) {
	begun, err := s.BeginInboxDeferred(ctx, p)
	if err != nil || begun.Duplicate {
		return begun, err
	}
	res, err := s.InboxVerdictTx(ctx, begun.Tx)
	if err != nil {
		_ = s.RollbackTx(ctx, begun.Tx)
		return nil, err
	}
	return res, nil
}

// operator returns h.Store as a stores.Operator (migrations, pruning), or
// skips t when the store does not implement it.
func operator[TTx any](t *testing.T, h *Harness[TTx]) stores.Operator {
	t.Helper()
	o, ok := h.Store.(stores.Operator)
	if !ok {
		t.Skipf("%T does not implement stores.Operator", h.Store)
	}
	return o
}

// outboxOf returns h.Store as a stores.OutboxStore (to read outbox rows
// back), or skips t when the store does not implement it.
func outboxOf[TTx any](t *testing.T, h *Harness[TTx]) stores.OutboxStore {
	t.Helper()
	o, ok := h.Store.(stores.OutboxStore)
	if !ok {
		t.Skipf("%T does not implement stores.OutboxStore", h.Store)
	}
	return o
}

// insertOutbox inserts row in tx at once (InsertOutboxManyTx with one row)
// and returns whether it was a duplicate.
func insertOutbox[TTx any](ctx context.Context, s stores.Store[TTx], tx TTx, row ackgap.OutboxEntry) (bool, error) {
	res, err := s.InsertOutboxManyTx(ctx, tx, &stores.OutboxInsertManyParams{Rows: []ackgap.OutboxEntry{row}})
	if err != nil {
		return false, err
	}
	return res.Duplicate[0], nil
}
