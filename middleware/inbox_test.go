package middleware_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	store   *sqlitestore.Store
	reports []ackgap.InboxReport
	calls   int
}

// setup returns a migrated SQLite store with an orders table holding o1
// (pending), and an inbox middleware for consumer c1 recording reports.
func setup(t *testing.T, cfg *middleware.InboxConfig) (message.HandlerMiddleware, *bundle) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, `CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL); INSERT INTO orders VALUES ('o1', 'pending')`)
	require.NoError(t, err)
	b := &bundle{store: store}
	if cfg == nil {
		cfg = &middleware.InboxConfig{}
	}
	c := *cfg
	if c.Consumer == "" {
		c.Consumer = "c1"
	}
	c.Observer = func(_ context.Context, r *ackgap.InboxReport) { b.reports = append(b.reports, *r) }
	inbox, err := middleware.Inbox[*sql.Tx](store, &c)
	require.NoError(t, err)
	return inbox, b
}

// charge moves o1 pending -> charging and adds an outbox row.
func (b *bundle) charge(msg *message.Message) ([]*message.Message, error) {
	b.calls++
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
	err = ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: msg.Payload})
	return nil, err
}

func (b *bundle) status(t *testing.T) string {
	t.Helper()
	var s string
	require.NoError(t, b.store.DB().QueryRow(`SELECT status FROM orders WHERE id = 'o1'`).Scan(&s))
	return s
}

func (b *bundle) outboxRows(t *testing.T) []stores.OutboxRow {
	t.Helper()
	res, err := b.store.ListOutbox(context.Background(), &stores.OutboxListParams{})
	require.NoError(t, err)
	return res.Rows
}

func (b *bundle) outcomes() []ackgap.Outcome {
	var out []ackgap.Outcome
	for _, r := range b.reports {
		out = append(out, r.Outcome)
	}
	return out
}

func event(id, payload string) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(payload))
	if id != "" {
		msg.Metadata.Set(ackgap.MetadataEventIDKey, id)
	}
	return msg
}

func TestAppliedThenDuplicate(t *testing.T) {
	inbox, b := setup(t, nil)
	h := inbox(b.charge)
	_, err := h(event("e1", `{"amount":100}`))
	require.NoError(t, err)
	_, err = h(event("e1", `{"amount":100}`))
	require.NoError(t, err, "a duplicate is acked")
	require.Equal(t, 1, b.calls, "the duplicate skipped the handler")
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate}, b.outcomes())
	require.Equal(t, "charging", b.status(t))
	rows := b.outboxRows(t)
	require.Len(t, rows, 1)
	require.Equal(t, []string{"c1", "e1"}, []string{rows[0].Consumer, rows[0].EventID}, "AddOutbox records who wrote the row")
	r := b.reports[0]
	require.False(t, r.HandlerStarted.Before(r.Received))
	require.False(t, r.Committed.Before(r.HandlerStarted))
}

func TestMissingEventIDIsRejectedNotPassed(t *testing.T) {
	inbox, b := setup(t, nil)
	_, err := inbox(b.charge)(event("", `{}`))
	require.ErrorIs(t, err, ackgap.ErrMissingEventID)
	require.True(t, ackgap.IsPermanent(err), "goes to the dead-letter path")
	require.Equal(t, ackgap.ReasonMissingEventID, ackgap.ReasonOf(err))
	require.Zero(t, b.calls)
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeRejected}, b.outcomes())
	require.Equal(t, "pending", b.status(t))
}

func TestEventIDOverLimitIsRejected(t *testing.T) {
	inbox, b := setup(t, &middleware.InboxConfig{MaxEventIDBytes: 8})
	_, err := inbox(b.charge)(event("123456789", `{}`))
	require.ErrorIs(t, err, ackgap.ErrEventIDTooLong)
	require.Equal(t, ackgap.ReasonEventIDTooLong, ackgap.ReasonOf(err))
	_, err = inbox(b.charge)(event("12345678", `{}`))
	require.NoError(t, err, "exactly at the limit is fine")

	inbox, b = setup(t, nil)
	_, err = inbox(b.charge)(event(strings.Repeat("x", ackgap.MaxEventIDBytesDefault+1), `{}`))
	require.ErrorIs(t, err, ackgap.ErrEventIDTooLong, "the default limit applies")
}

func TestEventIDReusedWithAnotherPayload(t *testing.T) {
	inbox, b := setup(t, nil)
	h := inbox(b.charge)
	_, err := h(event("e1", `{"amount":100}`))
	require.NoError(t, err)
	_, err = h(event("e1", `{"amount":250}`))
	require.ErrorIs(t, err, ackgap.ErrEventIDConflict)
	require.Equal(t, ackgap.ReasonEventIDConflict, ackgap.ReasonOf(err), "case S14: quarantined, not a plain duplicate")
	_, err = h(event("e1", `{"amount":100}`))
	require.NoError(t, err)
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeRejected, ackgap.OutcomeDuplicate}, b.outcomes())
	require.Len(t, b.outboxRows(t), 1)

	inbox, b = setup(t, &middleware.InboxConfig{PayloadMismatch: middleware.PayloadMismatchSkip})
	h = inbox(b.charge)
	_, err = h(event("e1", `{"sent_at":1}`))
	require.NoError(t, err)
	_, err = h(event("e1", `{"sent_at":2}`))
	require.NoError(t, err)
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate}, b.outcomes())
}

func TestHandlerErrorRollsBackEverything(t *testing.T) {
	inbox, b := setup(t, nil)
	boom := errors.New("boom")
	_, err := inbox(func(msg *message.Message) ([]*message.Message, error) {
		if _, err := b.charge(msg); err != nil {
			return nil, err
		}
		return nil, boom
	})(event("e1", `{}`))
	require.ErrorIs(t, err, boom)
	require.Equal(t, "pending", b.status(t))
	require.Empty(t, b.outboxRows(t))

	_, err = inbox(b.charge)(event("e1", `{}`))
	require.NoError(t, err, "the retry is not dropped as a duplicate")
	require.Equal(t, "charging", b.status(t))
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed, ackgap.OutcomeApplied}, b.outcomes())
}

func TestPanicRollsBackAndReports(t *testing.T) {
	inbox, b := setup(t, nil)
	h := inbox(func(msg *message.Message) ([]*message.Message, error) {
		_, _ = b.charge(msg)
		panic("handler bug")
	})
	require.PanicsWithValue(t, "handler bug", func() { _, _ = h(event("e1", `{}`)) })
	require.Equal(t, "pending", b.status(t))
	require.Empty(t, b.outboxRows(t))
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed}, b.outcomes())
	_, err := inbox(b.charge)(event("e1", `{}`))
	require.NoError(t, err)
	require.Equal(t, "charging", b.status(t))
}

func TestCancelledContextRollsBack(t *testing.T) {
	inbox, b := setup(t, nil)
	msg := event("e1", `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	msg.SetContext(ctx)
	_, err := inbox(func(m *message.Message) ([]*message.Message, error) {
		_, err := b.charge(m)
		cancel() // shutdown arrives after the handler's writes, before the commit
		return nil, err
	})(msg)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ackgap.IsPermanent(err), "cancellation is not poison")
	require.Equal(t, "pending", b.status(t))
	require.Empty(t, b.outboxRows(t))
}

func TestHelpersOutsideInbox(t *testing.T) {
	err := ackgap.AddOutbox(context.Background(), &ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "k"})
	require.ErrorIs(t, err, ackgap.ErrNoTransaction)
	_, err = ackgap.ApplyTransition(context.Background(), &ackgap.Transition{})
	require.ErrorIs(t, err, ackgap.ErrNoTransaction)
	_, ok := ackgap.TxFromContext[*sql.Tx](context.Background())
	require.False(t, ok)
}

func TestTxFromContextIsTyped(t *testing.T) {
	inbox, _ := setup(t, nil)
	var gotSQL, gotPgx bool
	_, err := inbox(func(msg *message.Message) ([]*message.Message, error) {
		tx, ok := sqlitestore.TxFromContext(msg.Context())
		gotSQL = ok && tx != nil
		_, gotPgx = ackgap.TxFromContext[pgx.Tx](msg.Context())
		id, _ := ackgap.EventIDFromContext(msg.Context())
		require.Equal(t, "e1", id)
		return nil, nil
	})(event("e1", `{}`))
	require.NoError(t, err)
	require.True(t, gotSQL)
	require.False(t, gotPgx, "another store's transaction type is not there")
}

func TestConfigValidation(t *testing.T) {
	store, err := sqlitestore.Open(context.Background(), testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	defer store.Close()
	_, err = middleware.Inbox[*sql.Tx](store, nil)
	require.ErrorContains(t, err, "invalid config")
	_, err = middleware.Inbox[*sql.Tx](store, &middleware.InboxConfig{MaxEventIDBytes: -1, RollbackTimeout: -1})
	require.ErrorContains(t, err, "Consumer is empty")
	require.ErrorContains(t, err, "MaxEventIDBytes is -1")
	require.ErrorContains(t, err, "RollbackTimeout is -1ns")
	_, err = middleware.Inbox[*sql.Tx](store, &middleware.InboxConfig{Consumer: strings.Repeat("c", 256)})
	require.ErrorContains(t, err, "over the limit")
}

func TestEventIDExtractors(t *testing.T) {
	body := middleware.EventIDFromJSONField("event_id")
	id, err := body(event("", `{"event_id":"b1"}`))
	require.NoError(t, err)
	require.Equal(t, "b1", id)
	id, err = body(event("", `{"other":1}`))
	require.NoError(t, err)
	require.Empty(t, id)
	_, err = body(event("", `not json`))
	require.ErrorIs(t, err, ackgap.ErrBadPayload)
	require.True(t, ackgap.IsPermanent(err))

	first := middleware.FirstEventID(middleware.EventIDFromMetadata("event_id"), body)
	id, err = first(event("m1", `{"event_id":"b1"}`))
	require.NoError(t, err)
	require.Equal(t, "m1", id)
	id, err = first(event("", `{"event_id":"b1"}`))
	require.NoError(t, err)
	require.Equal(t, "b1", id)
}

// TestDatabaseGoesAwayMidTransaction kills the handler's PostgreSQL
// backend between its writes: nothing commits, the error says the store
// is unavailable (so the router retries, never dead-letters), and the
// redelivery applies once.
func TestDatabaseGoesAwayMidTransaction(t *testing.T) {
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 0)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL); INSERT INTO orders VALUES ('o1', 'pending')`)
	require.NoError(t, err)
	var outcomes []ackgap.Outcome
	inbox, err := middleware.Inbox[pgx.Tx](store, &middleware.InboxConfig{Consumer: "c1",
		Observer: func(_ context.Context, r *ackgap.InboxReport) { outcomes = append(outcomes, r.Outcome) }})
	require.NoError(t, err)

	kill := true
	h := inbox(func(msg *message.Message) ([]*message.Message, error) {
		ctx := msg.Context()
		tx, _ := pgxstore.TxFromContext(ctx)
		if _, err := tx.Exec(ctx, `UPDATE orders SET status = 'charging' WHERE id = 'o1' AND status = 'pending'`); err != nil {
			return nil, err
		}
		if kill {
			kill = false
			var pid int
			require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
			_, err := pool.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pid)
			require.NoError(t, err)
		}
		err := ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1"})
		return nil, err
	})
	_, err = h(event("e1", `{}`))
	require.ErrorIs(t, err, ackgap.ErrStoreUnavailable)
	require.False(t, ackgap.IsPermanent(err))
	var status string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM orders`).Scan(&status))
	require.Equal(t, "pending", status)

	_, err = h(event("e1", `{}`))
	require.NoError(t, err)
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM orders`).Scan(&status))
	require.Equal(t, "charging", status)
	res, err := store.ListOutbox(ctx, &stores.OutboxListParams{})
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed, ackgap.OutcomeApplied}, outcomes)
}

// TestStoreClosed: a closed database is reported as unavailable, and the
// message is failed (nacked), not dropped.
func TestStoreClosed(t *testing.T) {
	inbox, b := setup(t, nil)
	require.NoError(t, b.store.Close())
	_, err := inbox(b.charge)(event("e1", `{}`))
	require.ErrorIs(t, err, ackgap.ErrStoreUnavailable)
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed}, b.outcomes())
}

// TestInvalidEventIDReport: the report of a message whose id is not UTF-8
// (or holds a NUL byte) has EventID "" as documented, outcome rejected,
// and an error that names the id quoted (escaped), never the raw bytes.
func TestInvalidEventIDReport(t *testing.T) {
	for id, quoted := range map[string]string{"bad\xff": `"bad\xff"`, "e1\x00": `"e1\x00"`} {
		inbox, b := setup(t, nil)
		_, err := inbox(b.charge)(event(id, `{}`))
		require.ErrorIs(t, err, ackgap.ErrEventIDInvalid)
		require.Zero(t, b.calls, "the handler never runs")
		require.Len(t, b.reports, 1)
		r := b.reports[0]
		require.Equal(t, "", r.EventID)
		require.Equal(t, ackgap.OutcomeRejected, r.Outcome)
		require.Contains(t, r.Err.Error(), quoted)
		require.NotContains(t, r.Err.Error(), id)
	}
}
