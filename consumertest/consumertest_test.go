package consumertest_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/consumertest"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type placed struct {
	OrderID string `json:"order_id"`
}

type orderRow struct {
	ID, Status string
	Version    int
}

// charge is written once, store-agnostic, and tested on both stores.
func charge[TTx any]() router.HandlerFunc[TTx] {
	return router.JSON(func(ctx context.Context, _ TTx, _ *message.Message, p placed) error {
		pending, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{
			Table: "orders", Key: p.OrderID, From: []string{"pending"}, To: "charging", VersionColumn: "version",
		})
		if err != nil {
			return err
		}
		res, err := pending.Result(ctx)
		if err != nil {
			return err
		}
		if err := res.Err(); err != nil {
			return err
		}
		if err := ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + p.OrderID, Payload: []byte(`{"amount":100}`)}); err != nil {
			return err
		}
		err = ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "email.receipt", IdempotencyKey: "receipt:" + p.OrderID})
		return err
	})
}

func newMessage() *message.Message {
	msg := message.NewMessage("uuid-"+consumertest.ConsumerDefault, []byte(`{"order_id":"o1"}`))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, "order.placed:o1")
	return msg
}

const schemaSQL = `CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0);
INSERT INTO orders (id, status) VALUES ('o1', 'pending'), ('o2', 'pending')`

// TestKitOnSQLite is the README's "Prove your own handler survives
// duplicates" snippet.
func TestKitOnSQLite(t *testing.T) {
	consumertest.Run(t, func(t *testing.T) *consumertest.Setup[*sql.Tx] {
		ctx := context.Background()
		store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "app.db"), nil) // a fresh store per call
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		_, err = store.Migrate(ctx, &stores.MigrateParams{})
		require.NoError(t, err)
		_, err = store.DB().Exec(schemaSQL)
		require.NoError(t, err)
		return &consumertest.Setup[*sql.Tx]{
			Store: store, Handler: charge[*sql.Tx](), Message: newMessage,
			Snapshot: func(t testing.TB) any {
				rows, err := store.DB().Query(`SELECT id, status, version FROM orders ORDER BY id`)
				require.NoError(t, err)
				defer rows.Close()
				var out []orderRow
				for rows.Next() {
					var r orderRow
					require.NoError(t, rows.Scan(&r.ID, &r.Status, &r.Version))
					out = append(out, r)
				}
				return out
			},
		}
	})
}

func TestKitOnPostgres(t *testing.T) {
	consumertest.Run(t, func(t *testing.T) *consumertest.Setup[pgx.Tx] {
		ctx := context.Background()
		pool, _ := testdb.Schema(t, 0)
		store, err := pgxstore.New(pool, nil)
		require.NoError(t, err)
		_, err = store.Migrate(ctx, &stores.MigrateParams{})
		require.NoError(t, err)
		_, err = pool.Exec(ctx, schemaSQL)
		require.NoError(t, err)
		return &consumertest.Setup[pgx.Tx]{
			Store: store, Handler: charge[pgx.Tx](), Message: newMessage,
			Snapshot: func(t testing.TB) any {
				rows, err := pool.Query(ctx, `SELECT id, status, version FROM orders ORDER BY id`)
				require.NoError(t, err)
				out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[orderRow])
				require.NoError(t, err)
				return out
			},
		}
	})
}
