package pgxstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// setup returns a migrated store in a schema of the test's own, with its
// tables in the pool's search_path.
func setup(t *testing.T) *pgxstore.Store {
	t.Helper()
	pool, _ := testdb.Schema(t, 0)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	return store
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *storetest.Harness[pgx.Tx] {
		pool, _ := testdb.Schema(t, 32)
		store, err := pgxstore.New(pool, nil)
		require.NoError(t, err)
		_, err = store.Migrate(context.Background(), &stores.MigrateParams{})
		require.NoError(t, err)
		return &storetest.Harness[pgx.Tx]{
			Store: store,
			Exec: func(ctx context.Context, sql string) error {
				_, err := pool.Exec(ctx, sql)
				return err
			},
			QueryRow: func(ctx context.Context, sql string, dest ...any) error {
				return pool.QueryRow(ctx, sql).Scan(dest...)
			},
		}
	})
}
