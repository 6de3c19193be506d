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
		Store: store,
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
	res, err := store.BeginInbox(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
	require.NoError(t, err)
	require.NoError(t, store.CommitTx(ctx, res.Tx))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "My-inbox"}.Sanitize()).Scan(&n))
	require.Equal(t, 1, n)
	_, err = pgxstore.New(pool, &pgxstore.Config{TablePrefix: strings.Repeat("p", 60)})
	require.ErrorContains(t, err, "longer than 63 bytes")
}
