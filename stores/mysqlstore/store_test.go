package mysqlstore_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

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
		res, err := store.BeginInbox(ctx, &stores.BeginInboxParams{Consumer: "c", EventID: "e-" + name, PayloadHash: []byte{1}})
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
