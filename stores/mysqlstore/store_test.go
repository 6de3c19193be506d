package mysqlstore_test

import (
	"context"
	"database/sql"
	"testing"

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
