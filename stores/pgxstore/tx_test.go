package pgxstore_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// TestQueuedRowVisibleToNextStatement: a queued row is sent ahead of the
// transaction's next statement, which sees it; inserting the same row
// after it at once (InsertOutboxManyTx) is then a duplicate.
func TestQueuedRowVisibleToNextStatement(t *testing.T) {
	ctx := context.Background()
	store, _ := migrated(t, nil)
	res, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
	require.NoError(t, err)
	row := &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{}`)}
	require.NoError(t, store.QueueOutboxTx(ctx, res.Tx, row))
	var n int
	require.NoError(t, res.Tx.QueryRow(ctx, `SELECT count(*) FROM ackgap_outbox`).Scan(&n))
	require.Equal(t, 1, n)
	again, err := store.InsertOutboxManyTx(ctx, res.Tx, &stores.OutboxInsertManyParams{Rows: []ackgap.OutboxEntry{*row}})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, again.Duplicate)
	require.NoError(t, store.CommitTx(ctx, res.Tx))
	require.ErrorIs(t, res.Tx.Commit(ctx), pgx.ErrTxClosed)
}

// TestQueuedConflictAtNextStatement: a queued row whose key exists with
// another payload fails the next statement with the conflict; the
// transaction rolls back and gives its connection back.
func TestQueuedConflictAtNextStatement(t *testing.T) {
	ctx := context.Background()
	store, pool := migrated(t, nil)
	first, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
	require.NoError(t, err)
	require.NoError(t, store.QueueOutboxTx(ctx, first.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":1}`)}))
	require.NoError(t, store.CommitTx(ctx, first.Tx))

	res, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e2"})
	require.NoError(t, err)
	require.NoError(t, store.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1", Payload: []byte(`{"amount":2}`)}))
	_, err = res.Tx.Exec(ctx, `SELECT 1`)
	require.ErrorIs(t, err, ackgap.ErrIdempotencyConflict)
	require.True(t, ackgap.IsPermanent(err))
	require.NoError(t, store.RollbackTx(ctx, res.Tx))
	require.Zero(t, pool.Stat().AcquiredConns(), "the connection went back to the pool")

	begun, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e2"})
	require.NoError(t, err)
	again, err := store.InboxVerdictTx(ctx, begun.Tx)
	require.NoError(t, err)
	require.False(t, again.Duplicate, "the inbox row rolled back")
	require.NoError(t, store.RollbackTx(ctx, again.Tx))
}

// TestQueueOnOtherTxInsertsAtOnce: on a transaction BeginInboxDeferred did not
// return, QueueOutboxTx inserts at once.
func TestQueueOnOtherTxInsertsAtOnce(t *testing.T) {
	ctx := context.Background()
	store, pool := migrated(t, nil)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, store.QueueOutboxTx(ctx, tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:o1"}))
	var n int
	require.NoError(t, tx.Conn().QueryRow(ctx, `SELECT count(*) FROM ackgap_outbox`).Scan(&n))
	require.Equal(t, 1, n)
}

// TestRoundTrips counts what one message costs on PostgreSQL through the
// inbox middleware, once every statement is prepared on the connection:
// applied, a billing handler (guarded transition, two outbox rows) takes
// one round trip when it does not read the transition's outcome
// (ackgap.ApplyTransition with its rows: BEGIN + one statement for the
// inbox insert, the UPDATE and the rows + COMMIT + pg_notify) and two when
// it reads it (PendingTransition.Result: BEGIN + inbox insert + UPDATE;
// then both rows of ackgap.AddOutbox + COMMIT + pg_notify); a duplicate
// takes two (the first round trip; the hash read, after a ROLLBACK where
// there was no COMMIT). A handler that sends nothing costs one (BEGIN +
// inbox insert + COMMIT). No round trip hides in the middleware.
// countingPool is a one-connection pool over a migrated schema whose
// round trips to PostgreSQL are counted in sent.
func countingPool(t *testing.T) (*pgxpool.Pool, *atomic.Int64) {
	_, base := migrated(t, nil)
	sent := &atomic.Int64{}
	cfg := base.Config().Copy()
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = roundTripCounter{sent}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, sent
}

func TestRoundTrips(t *testing.T) {
	ctx := context.Background()
	pool, sent := countingPool(t)
	_, err := pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL, version int NOT NULL DEFAULT 0)`)
	require.NoError(t, err)
	// Migrated already, by countingPool. Every commit carries its own
	// notification (a 1 ns interval), so no trailing one, sent on a pooled
	// connection, adds to the round trips counted here.
	store, err := pgxstore.New(pool, &pgxstore.Config{NotifyInterval: time.Nanosecond})
	require.NoError(t, err)

	for _, mode := range []string{"transition", "read", "empty"} {
		inbox, err := middleware.Inbox[pgx.Tx](store, &middleware.InboxConfig{Consumer: "billing"})
		require.NoError(t, err)
		h := inbox(func(msg *message.Message) ([]*message.Message, error) {
			ctx := msg.Context()
			order := msg.Metadata.Get("order")
			p := &ackgap.Transition{Table: "orders", Key: order, From: []string{"pending"}, To: "charging", VersionColumn: "version"}
			if mode == "empty" {
				return nil, nil
			}
			rows := []*ackgap.OutboxEntry{
				{Kind: "charge", IdempotencyKey: "charge:" + order, Payload: msg.Payload},
				{Kind: "receipt", IdempotencyKey: "receipt:" + order, Payload: msg.Payload},
			}
			if mode == "transition" {
				_, err := ackgap.ApplyTransition(ctx, p, rows...)
				return nil, err
			}
			pending, err := ackgap.ApplyTransition(ctx, p)
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
			for _, row := range rows {
				if err := ackgap.AddOutbox(ctx, row); err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
		deliver := func(order string) int64 {
			msg := message.NewMessage(order, []byte(`{"order":"`+order+`"}`))
			msg.Metadata.Set(ackgap.MetadataEventIDKey, "order.placed:"+order)
			msg.Metadata.Set("order", order)
			before := sent.Load()
			_, err := h(msg)
			require.NoError(t, err)
			return sent.Load() - before
		}
		prefix := mode[:1]
		for i := range 3 {
			_, err := pool.Exec(ctx, `INSERT INTO orders (id, status) VALUES ($1, 'pending')`, prefix+strconv.Itoa(i))
			require.NoError(t, err)
		}
		deliver(prefix + "0") // prepares every statement on the one connection
		want := map[string]int64{"transition": 1, "read": 2, "empty": 1}[mode]
		require.Equal(t, want, deliver(prefix+"1"), "round trips of an applied message, %s", mode)
		require.Equal(t, int64(2), deliver(prefix+"1"), "round trips of a duplicate, %s", mode)
	}
}

// roundTripCounter counts the queries and batches a connection sends,
// each one round trip once its statements are prepared (preparing one
// takes a round trip of its own, the first time only).
type roundTripCounter struct{ n *atomic.Int64 }

func (c roundTripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (roundTripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c roundTripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (roundTripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (roundTripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// TestDeferredStatementsOtherThanExec: a pending transaction's BEGIN and
// inbox insert go ahead of a statement that cannot ride behind them (an
// Exec without arguments, a Query, Conn()), which then runs inside the
// transaction.
func TestDeferredStatementsOtherThanExec(t *testing.T) {
	ctx := context.Background()
	store, pool := migrated(t, nil)
	_, err := pool.Exec(ctx, `CREATE TABLE notes (id int PRIMARY KEY)`)
	require.NoError(t, err)
	for i, use := range []func(tx pgx.Tx) error{
		func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO notes VALUES (1); INSERT INTO notes VALUES (2)`)
			return err
		},
		func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `INSERT INTO notes VALUES (1), (2) RETURNING id`)
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		},
		func(tx pgx.Tx) error { _, err := tx.Conn().Exec(ctx, `INSERT INTO notes VALUES (1), (2)`); return err },
	} {
		begun, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: "e" + strconv.Itoa(i)})
		require.NoError(t, err)
		tx := begun.Tx
		require.NoError(t, use(tx), "statement %d", i)
		require.NoError(t, store.RollbackTx(ctx, tx))
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&n))
		require.Zero(t, n, "statement %d ran inside the transaction and rolled back with it", i)
		require.Zero(t, pool.Stat().AcquiredConns())
	}
}

// TestQueueTransitionOnOtherTxRunsAtOnce: on a transaction BeginInboxDeferred did
// not return, QueueTransitionTx runs its statement at once: applied with
// its rows, then refused (permanent) from a state it does not start from.
func TestQueueTransitionOnOtherTxRunsAtOnce(t *testing.T) {
	ctx := context.Background()
	store, pool := migrated(t, nil)
	_, err := pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL); INSERT INTO orders VALUES ('o1', 'pending')`)
	require.NoError(t, err)
	p := &stores.QueueTransitionParams{
		Transition: ackgap.Transition{Table: "orders", Key: "o1", From: []string{"pending"}, To: "charging"},
		Outbox:     []ackgap.OutboxEntry{{Kind: "charge", IdempotencyKey: "charge:o1"}, {Kind: "charge", IdempotencyKey: "charge:o1"}},
	}
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, store.QueueTransitionTx(ctx, tx, p))
	var status string
	require.NoError(t, tx.QueryRow(ctx, `SELECT status FROM orders`).Scan(&status))
	require.Equal(t, "charging", status, "ran at once")
	require.NoError(t, tx.Commit(ctx))
	rows, err := store.ListOutbox(ctx, &stores.OutboxListParams{})
	require.NoError(t, err)
	require.Len(t, rows.Rows, 1, "one row per idempotency key")

	p.Transition.To = "shipped"
	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	err = store.QueueTransitionTx(ctx, tx, p)
	require.ErrorIs(t, err, ackgap.ErrTransitionRefused)
	require.True(t, ackgap.IsPermanent(err))

	p.Outbox[1].Payload = []byte("other")
	require.ErrorIs(t, store.QueueTransitionTx(ctx, tx, p), ackgap.ErrIdempotencyConflict, "one key, two payloads: at once")
}

// TestAcquireTimeoutIsUnavailable: a message whose handler deadline passes
// while every pool connection is busy fails with ErrStoreUnavailable
// (redelivered, never dead-lettered): the database was busy, the message
// was fine.
func TestAcquireTimeoutIsUnavailable(t *testing.T) {
	ctx := context.Background()
	_, base := migrated(t, nil)
	cfg := base.Config().Copy()
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	busy, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer busy.Release()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = store.BeginInboxDeferred(short, &stores.BeginInboxParams{Consumer: "c1", EventID: "e1"})
	require.ErrorIs(t, err, ackgap.ErrStoreUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestReleaseHeldBack: a RELEASE with nothing held back ahead of it waits
// for the next statement: it goes with the COMMIT (one round trip for
// both), and a rollback to the released savepoint still fails, as it
// would had the RELEASE gone at once; in a transaction a failed statement
// aborted, it is sent at once and fails.
func TestReleaseHeldBack(t *testing.T) {
	ctx := context.Background()
	pool, sent := countingPool(t)
	_, err := pool.Exec(ctx, `CREATE TABLE steps (id int PRIMARY KEY)`)
	require.NoError(t, err)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	begin := func(id string) pgx.Tx {
		res, err := store.BeginInboxMany(ctx, &stores.BeginInboxManyParams{Consumer: "c", Savepoint: "round",
			Rows: []stores.InboxManyRow{{EventID: id}}})
		require.NoError(t, err)
		return res.Tx
	}

	tx := begin("e1")
	_, err = tx.Exec(ctx, `INSERT INTO steps (id) VALUES ($1)`, 1)
	require.NoError(t, err)
	before := sent.Load()
	require.NoError(t, store.ReleaseSavepointTx(ctx, tx, "round"))
	require.Equal(t, int64(0), sent.Load()-before, "the RELEASE waits for the next statement")
	require.NoError(t, store.CommitTx(ctx, tx))
	require.Equal(t, int64(1), sent.Load()-before, "RELEASE and COMMIT in one round trip")
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM steps`).Scan(&n))
	require.Equal(t, 1, n)

	tx = begin("e2")
	_, err = tx.Exec(ctx, `INSERT INTO steps (id) VALUES ($1)`, 2)
	require.NoError(t, err)
	require.NoError(t, store.ReleaseSavepointTx(ctx, tx, "round"))
	require.Error(t, store.RollbackToSavepointTx(ctx, tx, "round"), "the savepoint was released")
	require.NoError(t, store.RollbackTx(ctx, tx))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM steps`).Scan(&n))
	require.Equal(t, 1, n)

	// A statement since the savepoint failed (its error ignored): the
	// RELEASE fails at once, and the rollback to the savepoint recovers.
	tx = begin("e3")
	_, err = tx.Exec(ctx, `INSERT INTO steps (id) VALUES ($1)`, 1)
	require.Error(t, err, "a duplicate key")
	require.Error(t, store.ReleaseSavepointTx(ctx, tx, "round"), "the transaction is aborted")
	require.NoError(t, store.RollbackToSavepointTx(ctx, tx, "round"))
	_, err = tx.Exec(ctx, `INSERT INTO steps (id) VALUES ($1)`, 3)
	require.NoError(t, err)
	require.NoError(t, store.CommitTx(ctx, tx))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM steps`).Scan(&n))
	require.Equal(t, 2, n)
}
