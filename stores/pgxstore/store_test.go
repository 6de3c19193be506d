package pgxstore_test

import (
	"context"
	"strings"
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

// harness is the conformance suites' view of a fresh, migrated store.
func harness(t *testing.T) *storetest.Harness[pgx.Tx] { return harnessTB(t) }

func harnessTB(t testing.TB) *storetest.Harness[pgx.Tx] {
	store, pool := migrated(t, nil)
	return &storetest.Harness[pgx.Tx]{
		Store:     store,
		Pipelines: true,
		Exec: func(ctx context.Context, sql string) error {
			_, err := pool.Exec(ctx, sql)
			return err
		},
		QueryRow: func(ctx context.Context, sql string, dest ...any) error {
			return pool.QueryRow(ctx, sql).Scan(dest...)
		},
	}
}

func TestConformance(t *testing.T) { storetest.Run(t, harness) }

// TestSchemaAndPrefix: with Config.Schema and TablePrefix set, Migrate
// creates the schema and the prefixed, quoted tables in it, and the store
// uses them whatever the connection's search_path.
func TestSchemaAndPrefix(t *testing.T) {
	ctx := context.Background()
	pool, testSchema := testdb.Schema(t, 0)
	schema := testSchema + `_Other "Q"`
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	})
	store, err := pgxstore.New(pool, &pgxstore.Config{Schema: schema, TablePrefix: "My-"})
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	res, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
	require.NoError(t, err)
	require.NoError(t, store.CommitTx(ctx, res.Tx))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "My-inbox"}.Sanitize()).Scan(&n))
	require.Equal(t, 1, n)
	_, err = pgxstore.New(pool, &pgxstore.Config{TablePrefix: strings.Repeat("p", 60)})
	require.ErrorContains(t, err, "longer than 63 bytes")
}

// TestConcurrentMigrate: instances starting together migrate one schema at
// once; the advisory lock makes each step run once and none fails.
func TestConcurrentMigrate(t *testing.T) {
	pool, _ := testdb.Schema(t, 8)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	errs := make(chan error, 4)
	applied := make(chan int, 4)
	for range 4 {
		go func() {
			res, err := store.Migrate(context.Background(), &stores.MigrateParams{})
			if err == nil {
				applied <- len(res.Applied)
			}
			errs <- err
		}()
	}
	total := 0
	for range 4 {
		require.NoError(t, <-errs)
	}
	close(applied)
	for n := range applied {
		total += n
	}
	all, err := pgxstore.Migrations(nil)
	require.NoError(t, err)
	require.Equal(t, len(all), total, "each migration applied exactly once across the instances")
}
