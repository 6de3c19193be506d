package sqlitestore_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
	"github.com/ackgap/ackgap/stores/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// setup returns a migrated store on a SQLite file of the test's own.
func setup(t testing.TB) *sqlitestore.Store {
	t.Helper()
	store, err := sqlitestore.Open(context.Background(), testdb.SQLitePath(t), nil)
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

// TestClaimLeaseStartsUnderTheLock: a claim that waits for SQLite's write
// lock (held here by another connection) gets a lease that starts when it
// holds the lock, not when it asked: Until is at least the lock's release
// plus the lease (a lease counted from the request was shortened by the
// wait).
func TestClaimLeaseStartsUnderTheLock(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLitePath(t)
	store, err := sqlitestore.Open(ctx, path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	begun, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c", EventID: "E1"})
	require.NoError(t, err)
	_, err = store.InsertOutboxManyTx(ctx, begun.Tx, &stores.OutboxInsertManyParams{Rows: []ackgap.OutboxEntry{{Kind: "k", IdempotencyKey: "E1-k", Payload: []byte("{}")}}})
	require.NoError(t, err)
	require.NoError(t, store.CommitTx(ctx, begun.Tx))

	other, err := sql.Open("sqlite", sqlitestore.DSN(path, 5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	holder, err := other.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	require.NoError(t, err)
	releasedAt := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		releasedAt <- time.Now()
		_ = holder.Rollback()
	}()
	const lease = time.Second
	res, err := store.ClaimOutbox(ctx, &stores.OutboxClaimParams{Lease: lease, Now: time.Now()})
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	released := <-releasedAt
	require.False(t, res.Rows[0].Claim.Until.Before(released.Add(lease).Truncate(time.Microsecond)),
		"lease until %v, lock released %v: the wait ate into the lease", res.Rows[0].Claim.Until, released)
}
