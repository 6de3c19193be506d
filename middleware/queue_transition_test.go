package middleware_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// qtStore is a migrated store with an orders table, for the
// ApplyTransition tests: pgxstore queues the transition, sqlitestore runs
// it at once.
type qtStore struct {
	name   string
	inbox  func(t *testing.T) message.HandlerMiddleware
	exec   func(t *testing.T, sql string)
	query  func(t *testing.T, sql string, dest ...any)
	outbox stores.OutboxStore
}

const qtOrders = `CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0)`

func qtStores(t *testing.T) []qtStore {
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 32)
	pg, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = pg.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	lite, err := sqlitestore.Open(ctx, testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lite.Close() })
	_, err = lite.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	out := []qtStore{
		{name: "postgres", outbox: pg,
			inbox: func(t *testing.T) message.HandlerMiddleware {
				m, err := middleware.Inbox[pgx.Tx](pg, &middleware.InboxConfig{Consumer: "billing"})
				require.NoError(t, err)
				return m
			},
			exec: func(t *testing.T, sql string) { _, err := pool.Exec(ctx, sql); require.NoError(t, err) },
			query: func(t *testing.T, sql string, dest ...any) {
				require.NoError(t, pool.QueryRow(ctx, sql).Scan(dest...))
			}},
		{name: "sqlite", outbox: lite,
			inbox: func(t *testing.T) message.HandlerMiddleware {
				m, err := middleware.Inbox[*sql.Tx](lite, &middleware.InboxConfig{Consumer: "billing"})
				require.NoError(t, err)
				return m
			},
			exec: func(t *testing.T, sql string) { _, err := lite.DB().ExecContext(ctx, sql); require.NoError(t, err) },
			query: func(t *testing.T, sql string, dest ...any) {
				require.NoError(t, lite.DB().QueryRowContext(ctx, sql).Scan(dest...))
			}},
	}
	for _, s := range out {
		s.exec(t, qtOrders)
	}
	return out
}

// moveOrder is a handler that moves its order pending -> charging with
// ackgap.ApplyTransition, without reading the outcome, and records a
// charge and a receipt behind it.
func moveOrder(from ...string) message.HandlerFunc {
	if len(from) == 0 {
		from = []string{"pending"}
	}
	return func(msg *message.Message) ([]*message.Message, error) {
		order := msg.Metadata.Get("order")
		_, err := ackgap.ApplyTransition(msg.Context(),
			&ackgap.Transition{Table: "orders", Key: order, From: from, To: "charging", VersionColumn: "version"},
			&ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + order, Payload: msg.Payload},
			&ackgap.OutboxEntry{Kind: "email.receipt", IdempotencyKey: "receipt:" + order, Payload: msg.Payload})
		return nil, err
	}
}

func orderEvent(id, order, payload string) *message.Message {
	msg := event(id, payload)
	msg.Metadata.Set("order", order)
	return msg
}

// TestApplyTransitionUnread: applied writes the rows; already applied writes
// nothing and is acked; refused is a permanent error and commits nothing
// (not even the inbox row, so a redrive applies); a duplicate is acked
// and writes nothing; a row whose key exists with another payload fails
// permanently and commits nothing. On both stores.
func TestApplyTransitionUnread(t *testing.T) {
	for _, s := range qtStores(t) {
		t.Run(s.name, func(t *testing.T) {
			inbox := s.inbox(t)
			s.exec(t, `INSERT INTO orders (id, status) VALUES ('o1', 'pending'), ('o2', 'charging'), ('o3', 'shipped'), ('o4', 'pending')`)
			h := inbox(moveOrder())
			count := func(where string) (n int) {
				s.query(t, `SELECT count(*) FROM ackgap_outbox WHERE `+where, &n)
				return n
			}
			version := func(order string) (v int) {
				s.query(t, `SELECT version FROM orders WHERE id = '`+order+`'`, &v)
				return v
			}

			_, err := h(orderEvent("e1", "o1", `{"n":1}`))
			require.NoError(t, err)
			require.Equal(t, 1, version("o1"))
			require.Equal(t, 2, count(`idempotency_key IN ('charge:o1', 'receipt:o1')`))

			_, err = h(orderEvent("e1", "o1", `{"n":1}`))
			require.NoError(t, err, "a duplicate is acked")
			require.Equal(t, 1, version("o1"))

			_, err = h(orderEvent("e2", "o2", `{"n":2}`))
			require.NoError(t, err, "already applied by another event: acked")
			require.Zero(t, version("o2"))
			require.Zero(t, count(`idempotency_key LIKE '%:o2'`), "no rows for a transition that did not apply")

			_, err = h(orderEvent("e3", "o3", `{"n":3}`))
			require.ErrorIs(t, err, ackgap.ErrTransitionRefused)
			require.Equal(t, ackgap.ReasonTransitionRefused, ackgap.ReasonOf(err))
			require.NotErrorIs(t, err, ackgap.ErrCommitUnknown, "a refusal is known to have rolled back")
			s.exec(t, `UPDATE orders SET status = 'pending' WHERE id = 'o3'`)
			_, err = h(orderEvent("e3", "o3", `{"n":3}`))
			require.NoError(t, err, "the refused message left no inbox row: its redrive applies")
			require.Equal(t, 1, version("o3"))

			s.exec(t, `INSERT INTO ackgap_outbox (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
SELECT kind, 'charge:o4', payload, payload_hash, headers, consumer, event_id, created_at, available_at FROM ackgap_outbox WHERE idempotency_key = 'charge:o1'`)
			_, err = h(orderEvent("e4", "o4", `{"n":4}`))
			require.ErrorIs(t, err, ackgap.ErrIdempotencyConflict)
			require.True(t, ackgap.IsPermanent(err))
			require.NotErrorIs(t, err, ackgap.ErrCommitUnknown, "a conflict is known to have rolled back")
			require.Zero(t, version("o4"), "the transition rolled back with the conflict")
			require.Zero(t, count(`idempotency_key = 'receipt:o4'`))
		})
	}
}

// TestApplyTransitionUnreadConcurrentDuplicates: 16 concurrent copies of one
// event whose transition would apply each time (From includes To, so only
// the inbox stands between them and a double apply): exactly one applies.
func TestApplyTransitionUnreadConcurrentDuplicates(t *testing.T) {
	for _, s := range qtStores(t) {
		t.Run(s.name, func(t *testing.T) {
			inbox := s.inbox(t)
			s.exec(t, `INSERT INTO orders (id, status) VALUES ('o1', 'pending')`)
			h := inbox(moveOrder("pending", "charging"))
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, 16)
			for range 16 {
				wg.Go(func() {
					<-start
					for {
						_, err := h(orderEvent("e1", "o1", `{}`))
						// A busy store (SQLite's busy_timeout passed on a
						// loaded machine) is redelivered, as the router
						// does: the copy comes again.
						if errors.Is(err, ackgap.ErrStoreUnavailable) {
							continue
						}
						errs <- err
						return
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			var v int
			s.query(t, `SELECT version FROM orders WHERE id = 'o1'`, &v)
			require.Equal(t, 1, v)
			res, err := s.outbox.ListOutbox(context.Background(), &stores.OutboxListParams{})
			require.NoError(t, err)
			require.Len(t, res.Rows, 2)
		})
	}
}

// TestApplyTransitionUnreadConcurrentDistinctEvents: two different events move
// the same order at once (order.placed and order.repriced both want
// pending -> charging). One applies; the other finds the order already
// charging once the first committed, which is "already applied" (acked,
// nothing written), never a refusal: the check must read the row as the
// UPDATE found it after waiting, not as the statement's snapshot had it.
func TestApplyTransitionUnreadConcurrentDistinctEvents(t *testing.T) {
	for _, s := range qtStores(t) {
		t.Run(s.name, func(t *testing.T) {
			inbox := s.inbox(t)
			h := inbox(moveOrder())
			for round := range 20 {
				order := "o" + strconv.Itoa(round)
				s.exec(t, `INSERT INTO orders (id, status) VALUES ('`+order+`', 'pending')`)
				var wg sync.WaitGroup
				start := make(chan struct{})
				errs := make(chan error, 4)
				for i := range 4 {
					wg.Go(func() {
						<-start
						_, err := h(orderEvent("e"+strconv.Itoa(i)+"-"+order, order, `{}`))
						errs <- err
					})
				}
				close(start)
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err, "round %d: a concurrent, distinct event is already applied, not refused", round)
				}
				var v int
				s.query(t, `SELECT version FROM orders WHERE id = '`+order+`'`, &v)
				require.Equal(t, 1, v)
			}
		})
	}
}

// TestApplyTransitionRead: a handler that reads a transition's outcome
// decides what a refusal does (here: ack, nothing written), and gets the
// rows written only when it applied; a transition that ran because the
// handler read a later one, and was refused, fails the commit unless it
// was read too. On both stores, whether they pipeline or not.
func TestApplyTransitionRead(t *testing.T) {
	for _, s := range qtStores(t) {
		t.Run(s.name, func(t *testing.T) {
			inbox := s.inbox(t)
			s.exec(t, `INSERT INTO orders (id, status) VALUES ('o1', 'pending'), ('o2', 'shipped'), ('o3', 'pending')`)
			var outcomes []ackgap.TransitionOutcome
			readAndSkip := inbox(func(msg *message.Message) ([]*message.Message, error) {
				ctx, order := msg.Context(), msg.Metadata.Get("order")
				pending, err := ackgap.ApplyTransition(ctx,
					&ackgap.Transition{Table: "orders", Key: order, From: []string{"pending"}, To: "charging"},
					&ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + order})
				if err != nil {
					return nil, err
				}
				res, err := pending.Result(ctx)
				if err != nil {
					return nil, err
				}
				outcomes = append(outcomes, res.Outcome)
				return nil, nil // a refusal is acked: the handler read it
			})
			count := func(where string) (n int) {
				s.query(t, `SELECT count(*) FROM ackgap_outbox WHERE `+where, &n)
				return n
			}
			_, err := readAndSkip(orderEvent("e1", "o1", `{}`))
			require.NoError(t, err)
			_, err = readAndSkip(orderEvent("e2", "o2", `{}`))
			require.NoError(t, err, "the handler read the refusal and returned nil")
			require.Equal(t, []ackgap.TransitionOutcome{ackgap.TransitionApplied, ackgap.TransitionRefused}, outcomes)
			require.Equal(t, 1, count(`idempotency_key = 'charge:o1'`))
			require.Zero(t, count(`idempotency_key = 'charge:o2'`), "no rows for a refused transition")

			// Two transitions; only the second is read: the first (refused)
			// runs first and, unread, fails the commit.
			readSecond := inbox(func(msg *message.Message) ([]*message.Message, error) {
				ctx := msg.Context()
				if _, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{Table: "orders", Key: "o2", From: []string{"pending"}, To: "charging"}); err != nil {
					return nil, err
				}
				pending, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{Table: "orders", Key: "o3", From: []string{"pending"}, To: "charging"})
				if err != nil {
					return nil, err
				}
				res, err := pending.Result(ctx)
				if err != nil {
					return nil, err
				}
				require.True(t, res.Applied())
				return nil, nil
			})
			invalid := inbox(func(msg *message.Message) ([]*message.Message, error) {
				_, err := ackgap.ApplyTransition(msg.Context(), &ackgap.Transition{Table: "orders", Key: "o3", To: "charging"},
					&ackgap.OutboxEntry{Kind: "charge"})
				return nil, err
			})
			_, err = invalid(orderEvent("e4", "o3", `{}`))
			require.ErrorContains(t, err, "invalid transition", "a transition is validated when applied")
			require.ErrorContains(t, err, "From is empty")

			_, err = readSecond(orderEvent("e3", "o3", `{}`))
			require.ErrorIs(t, err, ackgap.ErrTransitionRefused)
			require.True(t, ackgap.IsPermanent(err))
			var status string
			s.query(t, `SELECT status FROM orders WHERE id = 'o3'`, &status)
			require.Equal(t, "pending", status, "everything rolled back with the unread refusal")
		})
	}
}

// TestApplyTransitionMissingTable: a transition on a table the database
// does not have (a handler's migration not run) is refused by the server
// before the COMMIT runs: the error says the database is not set up, once,
// is not "commit outcome unknown", and is not permanent (the message is
// redelivered until the deploy is fixed). On both stores.
func TestApplyTransitionMissingTable(t *testing.T) {
	for _, s := range qtStores(t) {
		t.Run(s.name, func(t *testing.T) {
			h := s.inbox(t)(func(msg *message.Message) ([]*message.Message, error) {
				_, err := ackgap.ApplyTransition(msg.Context(),
					&ackgap.Transition{Table: "invoices", Key: "i1", From: []string{"open"}, To: "paid"},
					&ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:i1", Payload: msg.Payload})
				return nil, err
			})
			_, err := h(orderEvent("e1", "i1", `{"n":1}`))
			require.ErrorIs(t, err, ackgap.ErrStoreMisconfigured)
			require.NotErrorIs(t, err, ackgap.ErrCommitUnknown, "the server refused a statement: nothing committed")
			require.False(t, ackgap.IsPermanent(err), "redelivered, never dead-lettered")
			require.Equal(t, 1, strings.Count(err.Error(), ackgap.ErrStoreMisconfigured.Error()), "%v", err)
			var n int
			s.query(t, `SELECT count(*) FROM ackgap_inbox`, &n)
			require.Zero(t, n, "the inbox row rolled back with the refused statement")
		})
	}
}
