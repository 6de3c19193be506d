package kafkabroker_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// logRecords is a slog.Handler that keeps every record's level and message.
type logRecords struct {
	mu  sync.Mutex
	all []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.all = append(l.all, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// levels returns the levels at which message msg was logged.
func (l *logRecords) levels(msg string) []slog.Level {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Level
	for _, r := range l.all {
		if r.Message == msg {
			out = append(out, r.Level)
		}
	}
	return out
}

// errorRecords returns the messages logged at error level or above.
func (l *logRecords) errorRecords() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.all {
		if r.Level >= slog.LevelError {
			out = append(out, r.Message)
		}
	}
	return out
}

// TestS02ShutdownAtBeforeCommit is case S02 (shutdown cancels in-flight
// work, from ThreeDotsLabs/watermill #446, #568, PR #669): "m1 = E1
// {account: A1, amount: 100}; handler: begin tx -> update balance -> insert
// outbox row -> commit -> ack. Trigger shutdown at hook before_commit.
// Variant A (drain budget 2 s): tx commits; ack is sent on a context
// detached from the shutdown cancellation; outbox row present; relay (not
// the handler) publishes later; no 'publisher closed' error. Variant B
// (drain budget 0): tx rolls back fully (no balance change, no outbox row,
// no processed_events row); m1 not acked; on restart m1 is applied once.
// Expected (both): never 'state committed and no record of it', never
// 'acked and rolled back'; Variant B increments
// shutdown_inflight_aborted=1 and logs at warn, not error."
//
// On kfake and PostgreSQL. The drain budget is the subscriber's
// CloseTimeout; the hook is the end of the handler, inside the inbox
// transaction, where the handler waits until Close has begun.
func TestS02ShutdownAtBeforeCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		drain time.Duration
	}{
		{"A drain budget 2s", 2 * time.Second},
		{"B drain budget 0", time.Nanosecond}, // 0 would be the default
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, _ := testdb.Schema(t, 8)
			store, err := pgxstore.New(pool, nil)
			require.NoError(t, err)
			_, err = store.Migrate(ctx, &stores.MigrateParams{})
			require.NoError(t, err)
			_, err = pool.Exec(ctx, `CREATE TABLE accounts (id text PRIMARY KEY, balance integer NOT NULL); INSERT INTO accounts VALUES ('A1', 0)`)
			require.NoError(t, err)
			topic, group := unique("accounts"), unique("billing")
			pub := newPublisher(t)
			msg, err := kafkabroker.NewEvent("E1", []byte(`{"account":"A1","amount":100}`))
			require.NoError(t, err)
			require.NoError(t, pub.Publish(topic, msg))

			type deposit struct {
				Account string `json:"account"`
				Amount  int    `json:"amount"`
			}
			var hookOnce sync.Once
			atHook, closing := make(chan struct{}), make(chan struct{})
			handle := router.JSON(func(ctx context.Context, tx pgx.Tx, msg *message.Message, d deposit) error {
				if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance + $1 WHERE id = $2`, d.Amount, d.Account); err != nil {
					return err
				}
				if err := ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "notify", IdempotencyKey: "deposit:E1", Payload: msg.Payload}); err != nil {
					return err
				}
				first := false
				hookOnce.Do(func() { first = true })
				if first { // before_commit: shutdown begins here
					close(atHook)
					<-closing
					if tc.drain < time.Millisecond {
						<-ctx.Done() // no drain budget: the close cancels the message
						return ctx.Err()
					}
					time.Sleep(200 * time.Millisecond) // within the 2 s budget
				}
				return nil
			})
			logs := &logRecords{}
			rep := &reports{}
			newRouter := func(drain time.Duration) *running {
				r, err := router.New[pgx.Tx](store, &router.Config{DeadLetter: pub, DeadLetterTopic: topic + ".dlq",
					InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: router.SlogLogger(slog.New(logs))})
				require.NoError(t, err)
				require.NoError(t, r.AddHandler("c1", topic, newSubscriber(t, group, func(c *kafkabroker.SubscriberConfig) {
					if drain > 0 {
						c.CloseTimeout = drain
					}
				}), handle))
				return start(t, r)
			}
			balance := func() int {
				var b int
				require.NoError(t, pool.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = 'A1'`).Scan(&b))
				return b
			}
			count := func(query string) int {
				var n int
				require.NoError(t, pool.QueryRow(ctx, query).Scan(&n))
				return n
			}

			run := newRouter(tc.drain)
			waitClosed(t, atHook, "m1 at before_commit")
			closed := make(chan error, 1)
			go func() { closed <- run.close() }()
			close(closing)
			eventually(t, 60*time.Second, "m1's first attempt to end", func() bool { return len(rep.outcomes("E1")) > 0 })
			closeErr := <-closed

			if tc.drain >= time.Millisecond {
				require.NoError(t, closeErr)
				require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, rep.outcomes("E1"), "the drain let the tx commit")
				require.Equal(t, 100, balance())
				require.Equal(t, 1, count(`SELECT count(*) FROM ackgap_inbox WHERE consumer = 'c1' AND event_id = 'E1'`))
				rows, err := store.ListOutbox(ctx, &stores.OutboxListParams{Kind: "notify"})
				require.NoError(t, err)
				require.Len(t, rows.Rows, 1)
				require.Equal(t, stores.OutboxPending, rows.Rows[0].State, "the handler published nothing; the row waits for the relay")
				assertNothingRedelivered(t, topic, group) // m1 was acked and its offset committed

				// The relay, not the handler, publishes later.
				relay, err := outbox.New(store, &outbox.Config{Effects: map[string]outbox.Effect{"notify": outbox.Publish(pub, topic+".notify")}})
				require.NoError(t, err)
				n, err := relay.RunOnce(ctx)
				require.NoError(t, err)
				require.Equal(t, 1, n)
				sent := readAll(t, topic+".notify", 1)
				require.Equal(t, "deposit:E1", sent[0].Metadata.Get(ackgap.MetadataEventIDKey))
				require.Empty(t, logs.levels(router.LogNackShutdown))
				require.Empty(t, logs.errorRecords(), "no 'publisher closed' or other error")
				return
			}

			// Variant B: rolled back whole, not acked.
			require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed}, rep.outcomes("E1"))
			require.Equal(t, 0, balance())
			require.Equal(t, 0, count(`SELECT count(*) FROM ackgap_inbox`))
			require.Equal(t, 0, count(`SELECT count(*) FROM ackgap_outbox`))
			require.Equal(t, []slog.Level{slog.LevelWarn}, logs.levels(router.LogNackShutdown),
				"shutdown_inflight_aborted = 1, logged at warn")
			require.Empty(t, logs.errorRecords(), "a shutdown nack is not an error")

			// Restart: m1 (never committed) is applied once.
			restarted := newRouter(0)
			eventually(t, 60*time.Second, "m1 applied after the restart", func() bool {
				return len(rep.outcomes("E1")) > 1
			})
			require.NoError(t, restarted.close())
			require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed, ackgap.OutcomeApplied}, rep.outcomes("E1"))
			require.Equal(t, 100, balance())
			require.Equal(t, 1, count(`SELECT count(*) FROM ackgap_inbox WHERE consumer = 'c1' AND event_id = 'E1'`))
			require.Equal(t, 1, count(`SELECT count(*) FROM ackgap_outbox`))
			assertNothingRedelivered(t, topic, group)
		})
	}
}
