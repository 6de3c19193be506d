package middleware_test

import (
	"context"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// TestAddOutbox: rows added with ackgap.AddOutbox commit with the message's
// transaction and record who wrote them, on a store that queues them
// (pgxstore) and on one that inserts them at once (sqlitestore); a key
// reused with another payload fails the delivery with a permanent error
// and rolls everything back, inbox row included.
func TestAddOutbox(t *testing.T) {
	type target struct {
		inbox  message.HandlerMiddleware
		lister stores.OutboxStore
		status func(t *testing.T) string
	}
	targets := map[string]func(t *testing.T) target{
		"sqlite": func(t *testing.T) target {
			inbox, b := setup(t, nil)
			return target{inbox, b.store, b.status}
		},
		"postgres": func(t *testing.T) target {
			ctx := context.Background()
			pool, _ := testdb.Schema(t, 4)
			store, err := pgxstore.New(pool, nil)
			require.NoError(t, err)
			_, err = store.Migrate(ctx, &stores.MigrateParams{})
			require.NoError(t, err)
			_, err = pool.Exec(ctx, `CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL); INSERT INTO orders VALUES ('o1', 'pending')`)
			require.NoError(t, err)
			inbox, err := middleware.Inbox[pgx.Tx](store, &middleware.InboxConfig{Consumer: "c1"})
			require.NoError(t, err)
			status := func(t *testing.T) string {
				var s string
				require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = 'o1'`).Scan(&s))
				return s
			}
			return target{inbox, store, status}
		},
	}
	charge := func(msg *message.Message) ([]*message.Message, error) {
		ctx := msg.Context()
		pending, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{Table: "orders", Key: "o1", From: []string{"pending"}, To: "charging"})
		if err != nil {
			return nil, err
		}
		res, err := pending.Result(ctx)
		if err != nil {
			return nil, err
		}
		if err := res.Err(); err != nil {
			return nil, err
		}
		return nil, ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: msg.Payload})
	}
	for name, setup := range targets {
		t.Run(name+"/applied", func(t *testing.T) {
			tg := setup(t)
			_, err := tg.inbox(charge)(event("e1", `{"amount":100}`))
			require.NoError(t, err)
			require.Equal(t, "charging", tg.status(t))
			res, err := tg.lister.ListOutbox(context.Background(), &stores.OutboxListParams{})
			require.NoError(t, err)
			require.Len(t, res.Rows, 1)
			require.Equal(t, []string{"c1", "e1", `{"amount":100}`}, []string{res.Rows[0].Consumer, res.Rows[0].EventID, string(res.Rows[0].Payload)})
		})
		t.Run(name+"/conflict", func(t *testing.T) {
			tg := setup(t)
			_, err := tg.inbox(func(msg *message.Message) ([]*message.Message, error) {
				return nil, ackgap.AddOutbox(msg.Context(), &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":100}`)})
			})(event("e0", `{}`))
			require.NoError(t, err)

			_, err = tg.inbox(charge)(event("e1", `{"amount":250}`))
			require.ErrorIs(t, err, ackgap.ErrIdempotencyConflict)
			require.True(t, ackgap.IsPermanent(err), "dead-lettered, not retried")
			require.Equal(t, "pending", tg.status(t), "the transition rolled back")
			calls := 0
			_, err = tg.inbox(func(*message.Message) ([]*message.Message, error) { calls++; return nil, nil })(event("e1", `{"amount":250}`))
			require.NoError(t, err)
			require.Equal(t, 1, calls, "the inbox row rolled back too: a redrive runs the handler again")
		})
	}
}

func TestQueueOutboxOutsideInbox(t *testing.T) {
	err := ackgap.AddOutbox(context.Background(), &ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "k"})
	require.ErrorIs(t, err, ackgap.ErrNoTransaction)
}
