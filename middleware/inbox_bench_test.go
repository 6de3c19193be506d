package middleware_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// BenchmarkInbox measures one message through the inbox on each store:
// "applied" begins, inserts the inbox row, runs an empty handler and
// commits; "duplicate" finds the row and rolls back.
func BenchmarkInbox(b *testing.B) {
	ctx := context.Background()
	noop := func(*message.Message) ([]*message.Message, error) { return nil, nil }
	run := func(b *testing.B, h message.HandlerFunc) {
		b.Run("applied", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := h(event("bench-"+strconv.Itoa(i), `{}`)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("duplicate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(event("bench-1", `{}`)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("sqlite", func(b *testing.B) {
		store, err := sqlitestore.Open(ctx, testdb.SQLitePath(b), nil)
		require.NoError(b, err)
		defer store.Close()
		_, err = store.Migrate(ctx, &stores.MigrateParams{})
		require.NoError(b, err)
		inbox, err := middleware.Inbox[*sql.Tx](store, &middleware.InboxConfig{Consumer: "bench"})
		require.NoError(b, err)
		run(b, inbox(noop))
	})
	b.Run("postgres", func(b *testing.B) {
		pool, _ := testdb.Schema(b, 0)
		store, err := pgxstore.New(pool, nil)
		require.NoError(b, err)
		_, err = store.Migrate(ctx, &stores.MigrateParams{})
		require.NoError(b, err)
		inbox, err := middleware.Inbox[pgx.Tx](store, &middleware.InboxConfig{Consumer: "bench"})
		require.NoError(b, err)
		run(b, inbox(noop))
	})
}
