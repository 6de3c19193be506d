package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
	"github.com/ackgap/ackgap/stores/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// setup returns a migrated store on a MariaDB database of the test's own.
func setup(t testing.TB) *mysqlstore.Store {
	t.Helper()
	store, err := mysqlstore.Open(context.Background(), testdb.MySQLDatabase(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	return store
}

// harness is the conformance suites' view of a fresh, migrated store.
func harness(t *testing.T) *storetest.Harness[*sql.Tx] { return harnessTB(t) }

func harnessTB(t testing.TB) *storetest.Harness[*sql.Tx] {
	store := setup(t)
	return &storetest.Harness[*sql.Tx]{
		Store: store,
		Exec: func(ctx context.Context, q string) error {
			_, err := store.DB().ExecContext(ctx, q)
			return err
		},
		QueryRow: func(ctx context.Context, q string, dest ...any) error {
			return store.DB().QueryRowContext(ctx, q).Scan(dest...)
		},
	}
}

func TestConformance(t *testing.T) { storetest.Run(t, harness) }

// TestSessionSetup checks what ParseDSN and Open set up: parameters
// interpolated by the driver (one round trip per statement), and every
// store transaction at READ COMMITTED, both on Open's pool (set once per
// session) and on a *sql.DB given to New whose sessions are at the
// server's default, REPEATABLE READ (set per transaction). READ COMMITTED
// shows as a row committed by another connection during the transaction
// becoming visible to its next read; REPEATABLE READ would keep the first
// read's snapshot.
func TestSessionSetup(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQLDatabase(t)
	cfg, err := mysqlstore.ParseDSN(dsn)
	require.NoError(t, err)
	require.True(t, cfg.InterpolateParams)
	require.False(t, cfg.ClientFoundRows)

	opened, err := mysqlstore.Open(ctx, dsn, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = opened.Close() })
	_, err = opened.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	conn, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	plain := sql.OpenDB(conn)
	t.Cleanup(func() { _ = plain.Close() })
	var def string
	require.NoError(t, plain.QueryRowContext(ctx, `SELECT @@tx_isolation`).Scan(&def))
	require.Equal(t, "REPEATABLE-READ", def, "the server's default")
	given, err := mysqlstore.New(plain, nil)
	require.NoError(t, err)

	for _, name := range []string{"Open", "New"} {
		store := map[string]*mysqlstore.Store{"Open": opened, "New": given}[name]
		res, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c", EventID: "e-" + name, PayloadHash: []byte{1}})
		require.NoError(t, err, name)
		t.Cleanup(func() { _ = res.Tx.Rollback() }) // a failed check must not leave the database locked
		count := func() (n int) {
			require.NoError(t, res.Tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM "ackgap_inbox" WHERE consumer = 'other'`).Scan(&n), name)
			return n
		}
		before := count()
		_, err = opened.DB().ExecContext(ctx, `INSERT INTO "ackgap_inbox" (consumer, event_id, received_at) VALUES ('other', ?, 0)`, name)
		require.NoError(t, err, name)
		require.Equal(t, before+1, count(), "%s: the transaction reads what committed since its first read", name)
		require.NoError(t, store.CommitTx(ctx, res.Tx), name)
	}
	require.NoError(t, plain.QueryRowContext(ctx, `SELECT @@tx_isolation`).Scan(&def))
	require.Equal(t, "REPEATABLE-READ", def, "New leaves the caller's sessions as they were")
}

// TestQueueTransitionRows: the rows of a queued transition that applied go
// in one INSERT; when one of their keys exists already, that INSERT fails
// alone and the rows are written as InsertOutboxManyTx writes them: a key
// held with the same payload is a duplicate (the others are written), with
// another payload an idempotency conflict; a transition already applied
// or refused writes no row.
func TestQueueTransitionRows(t *testing.T) {
	ctx := context.Background()
	store := setup(t)
	_, err := store.DB().ExecContext(ctx, `CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY, status VARCHAR(16) NOT NULL)`)
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, `INSERT INTO orders VALUES ('o1', 'new'), ('o2', 'new'), ('o3', 'new'), ('o4', 'cancelled')`)
	require.NoError(t, err)
	rows := func(key1, key2, payload2 string) []ackgap.OutboxEntry {
		return []ackgap.OutboxEntry{{Kind: "k", IdempotencyKey: key1, Payload: []byte("p")}, {Kind: "k", IdempotencyKey: key2, Payload: []byte(payload2)}}
	}
	queue := func(order string, outbox []ackgap.OutboxEntry) error {
		res, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c", EventID: "e-" + order + "-" + outbox[0].IdempotencyKey})
		require.NoError(t, err)
		var applied *bool
		err = store.QueueTransitionTx(ctx, res.Tx, &stores.QueueTransitionParams{
			Transition: ackgap.Transition{Table: "orders", Key: order, From: []string{"new"}, To: "done"},
			Outbox:     outbox, Ran: func(a bool) { applied = &a },
		})
		if err != nil {
			require.NoError(t, store.RollbackTx(ctx, res.Tx))
			return err
		}
		require.NotNil(t, applied, "Ran called")
		return store.CommitTx(ctx, res.Tx)
	}
	keys := func() []string {
		var out []string
		r, err := store.DB().QueryContext(ctx, `SELECT idempotency_key FROM "ackgap_outbox" ORDER BY idempotency_key`)
		require.NoError(t, err)
		defer r.Close()
		for r.Next() {
			var k string
			require.NoError(t, r.Scan(&k))
			out = append(out, k)
		}
		return out
	}

	require.NoError(t, queue("o1", rows("a", "b", "p")))
	require.Equal(t, []string{"a", "b"}, keys())
	require.NoError(t, queue("o2", rows("b", "c", "p")), "b held with the same payload: a duplicate")
	require.Equal(t, []string{"a", "b", "c"}, keys())
	require.ErrorIs(t, queue("o3", rows("d", "c", "other")), ackgap.ErrIdempotencyConflict)
	require.Equal(t, []string{"a", "b", "c"}, keys(), "the conflict wrote nothing")
	require.NoError(t, queue("o1", rows("e", "f", "p")), "o1 is done already: nothing written")
	require.ErrorIs(t, queue("o4", rows("e", "f", "p")), ackgap.ErrTransitionRefused, "o4 is cancelled, not new")
	require.ErrorIs(t, queue("o3", rows("g", "g", "other")), ackgap.ErrIdempotencyConflict, "one key, two payloads")
	require.Equal(t, []string{"a", "b", "c"}, keys())
}

// TestBeginInboxManyLockOrder: two batches with the same event ids in
// opposite orders, begun at once, never deadlock (1213 would be
// redelivered, but a busy consumer group would keep paying for it): the
// store inserts in key order, so the second waits for the first and finds
// its rows duplicates. Each event id is applied by exactly one batch.
func TestBeginInboxManyLockOrder(t *testing.T) {
	ctx := context.Background()
	store := setup(t)
	for round := range 10 {
		rows := make([]stores.InboxManyRow, 200)
		for i := range rows {
			rows[i] = stores.InboxManyRow{EventID: fmt.Sprintf("r%d-e%03d", round, i)}
		}
		reversed := slices.Clone(rows)
		slices.Reverse(reversed)
		start := make(chan struct{})
		owned := make([]int, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for g, batch := range [][]stores.InboxManyRow{rows, reversed} {
			wg.Go(func() {
				<-start
				res, err := store.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c", Rows: batch})
				if err != nil {
					errs[g] = err
					return
				}
				for _, r := range res.Rows {
					if !r.Duplicate {
						owned[g]++
					}
				}
				time.Sleep(5 * time.Millisecond) // hold the locks a moment, as a handler does
				errs[g] = store.CommitTx(ctx, res.Tx)
			})
		}
		close(start)
		wg.Wait()
		require.NoError(t, errors.Join(errs...), "round %d", round)
		require.Equal(t, len(rows), owned[0]+owned[1], "round %d: each event id applied by one batch", round)
	}
}

// TestBeginInboxManyDeadlockVictim: a transaction that holds inbox row b
// and then inserts a, while a batch that inserted a waits for b, is a
// deadlock; InnoDB rolls back the lighter transaction, the batch (the
// other one wrote 50 rows first). BeginInboxMany begins again and finds a
// and b committed by the other: duplicates, not a 1213.
func TestBeginInboxManyDeadlockVictim(t *testing.T) {
	ctx := context.Background()
	store := setup(t)
	other, err := store.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = other.Rollback() }()
	insert := func(id string) error {
		_, err := other.ExecContext(ctx, `INSERT INTO "ackgap_inbox" (consumer, event_id, received_at) VALUES ('c', ?, 0)`, id)
		return err
	}
	for i := range 50 {
		require.NoError(t, insert(fmt.Sprintf("z%02d", i)))
	}
	require.NoError(t, insert("b"))
	done := make(chan error, 1)
	var res *stores.BeginInboxManyResult[*sql.Tx]
	go func() {
		var err error
		res, err = store.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c",
			Rows: []stores.InboxManyRow{{EventID: "a"}, {EventID: "b"}}})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // let the batch insert a and wait for b; if it is later, there is no deadlock and the outcome is the same
	require.NoError(t, insert("a"))
	require.NoError(t, other.Commit())
	require.NoError(t, <-done)
	require.True(t, res.Rows[0].Duplicate && res.Rows[1].Duplicate, "%+v", res.Rows)
	require.NoError(t, store.RollbackTx(ctx, res.Tx))
}
