package batch_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a migrated store with an orders table, and ways to look at it.
type env[TTx any] struct {
	store stores.Store[TTx]
	exec  func(t testing.TB, q string)
	count func(t testing.TB, q string) int
}

const ordersDDL = `CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL DEFAULT 'pending', version INTEGER NOT NULL DEFAULT 0)`

func pgEnv(t testing.TB) *env[pgx.Tx] {
	pool, _ := testdb.Schema(t, 8)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	e := &env[pgx.Tx]{
		store: store,
		exec: func(t testing.TB, q string) {
			_, err := pool.Exec(context.Background(), q)
			require.NoError(t, err)
		},
		count: func(t testing.TB, q string) int {
			var n int
			require.NoError(t, pool.QueryRow(context.Background(), q).Scan(&n))
			return n
		},
	}
	e.exec(t, ordersDDL)
	return e
}

func sqliteEnv(t testing.TB) *env[*sql.Tx] {
	store, err := sqlitestore.Open(context.Background(), testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	db := store.DB()
	e := &env[*sql.Tx]{
		store: store,
		exec: func(t testing.TB, q string) {
			_, err := db.ExecContext(context.Background(), q)
			require.NoError(t, err)
		},
		count: func(t testing.TB, q string) int {
			var n int
			require.NoError(t, db.QueryRowContext(context.Background(), q).Scan(&n))
			return n
		},
	}
	e.exec(t, ordersDDL)
	return e
}

func TestPostgres(t *testing.T) { suite(t, func(t *testing.T) *env[pgx.Tx] { return pgEnv(t) }) }

func TestSQLite(t *testing.T) { suite(t, func(t *testing.T) *env[*sql.Tx] { return sqliteEnv(t) }) }

func TestRoundsPostgres(t *testing.T) {
	roundsSuite(t, func(t *testing.T) *env[pgx.Tx] { return pgEnv(t) })
}

func TestRoundsSQLite(t *testing.T) {
	roundsSuite(t, func(t *testing.T) *env[*sql.Tx] { return sqliteEnv(t) })
}

// orders adds pending orders o1..on.
func (e *env[TTx]) orders(t *testing.T, n int) {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf("('o%d')", i+1)
	}
	e.exec(t, `INSERT INTO orders (id) VALUES `+strings.Join(vals, ", "))
}

// state returns the committed count of charging orders, the sum of the
// orders' versions (applied transitions), charge outbox rows and inbox
// rows.
func (e *env[TTx]) state(t *testing.T) [4]int {
	return [4]int{
		e.count(t, `SELECT count(*) FROM orders WHERE status = 'charging'`),
		e.count(t, `SELECT coalesce(sum(version), 0) FROM orders`),
		e.count(t, `SELECT count(*) FROM ackgap_outbox WHERE kind = 'charge'`),
		e.count(t, `SELECT count(*) FROM ackgap_inbox`),
	}
}

// event returns a message of event id, moving order, with payload.
func event(id, order, payload string) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(payload))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, id)
	msg.Metadata.Set("order", order)
	return msg
}

// events returns messages e1..en moving o1..on.
func events(n int) []*message.Message {
	out := make([]*message.Message, n)
	for i := range out {
		out[i] = event(fmt.Sprintf("e%d", i+1), fmt.Sprintf("o%d", i+1), fmt.Sprintf(`{"order":"o%d"}`, i+1))
	}
	return out
}

// charge is the billing handler through the middleware helpers: the
// guarded transition and a charge outbox row; then fail(order) may fail
// or panic, after the writes, so that the rollback has work to undo.
func charge[TTx any](fail func(order string) error) router.HandlerFunc[TTx] {
	return func(ctx context.Context, tx TTx, msg *message.Message) error {
		if ctxTx, ok := ackgap.TxFromContext[TTx](ctx); !ok || any(ctxTx) != any(tx) {
			return errors.New("ackgap.TxFromContext does not return the handler's transaction")
		}
		if id, _ := ackgap.EventIDFromContext(ctx); id != msg.Metadata.Get(ackgap.MetadataEventIDKey) {
			return fmt.Errorf("ackgap.EventIDFromContext returned %q", id)
		}
		order := msg.Metadata.Get("order")
		pending, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{
			Table: "orders", Key: order, From: []string{"pending"}, To: "charging", VersionColumn: "version",
		})
		if err != nil {
			return err
		}
		res, err := pending.Result(ctx)
		if err != nil {
			return err
		}
		if !res.Applied() {
			return res.Err()
		}
		if err := ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + order, Payload: msg.Payload}); err != nil {
			return err
		}
		if fail != nil {
			return fail(order)
		}
		return nil
	}
}

// setCharge is charge as a BatchHandler: the transitions, then every
// outbox row with one InsertOutboxManyTx.
func setCharge[TTx any](store stores.Store[TTx], calls *[][]string) batch.BatchHandlerFunc[TTx] {
	return func(ctx context.Context, tx TTx, msgs []*message.Message) error {
		var ids []string
		rows := make([]ackgap.OutboxEntry, 0, len(msgs))
		for _, msg := range msgs {
			order := msg.Metadata.Get("order")
			ids = append(ids, msg.Metadata.Get(ackgap.MetadataEventIDKey))
			res, err := store.TransitionIfStateTx(ctx, tx, &ackgap.Transition{
				Table: "orders", Key: order, From: []string{"pending"}, To: "charging", VersionColumn: "version",
			})
			if err != nil {
				return err
			}
			if err := res.Err(); err != nil {
				return err
			}
			rows = append(rows, ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + order, Payload: msg.Payload})
		}
		if calls != nil {
			*calls = append(*calls, ids)
		}
		_, err := store.InsertOutboxManyTx(ctx, tx, &stores.OutboxInsertManyParams{Rows: rows})
		return err
	}
}

func newProcessor[TTx any](t *testing.T, store stores.Store[TTx], cfg batch.Config[TTx]) *batch.Processor[TTx] {
	t.Helper()
	cfg.Consumer = "billing"
	p, err := batch.New(store, &cfg)
	require.NoError(t, err)
	return p
}

func outcomes(res *batch.Result) []ackgap.Outcome {
	out := make([]ackgap.Outcome, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = m.Outcome
	}
	return out
}

const (
	applied   = ackgap.OutcomeApplied
	duplicate = ackgap.OutcomeDuplicate
	rejected  = ackgap.OutcomeRejected
	failed    = ackgap.OutcomeFailed
)

func suite[TTx any](t *testing.T, newEnv func(t *testing.T) *env[TTx]) {
	ctx := context.Background()

	t.Run("OneFailingMessage", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 5)
		broken := true
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: charge[TTx](func(order string) error {
			if order == "o3" && broken {
				return fmt.Errorf("card processor said no: %w", ackgap.ErrStoreUnavailable)
			}
			return nil
		})})
		msgs := events(5)
		res, err := p.Process(ctx, msgs)
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied, applied, failed, applied, applied}, outcomes(res))
		require.ErrorIs(t, res.Messages[2].Err, ackgap.ErrStoreUnavailable)
		require.False(t, res.Committed.IsZero())
		require.Equal(t, [4]int{4, 4, 4, 4}, e.state(t), "N-1 state changes, outbox rows and inbox rows; none for the failed one")

		broken = false
		res, err = p.Process(ctx, []*message.Message{msgs[2]})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied}, outcomes(res), "the redelivery of the failed message applies")
		require.Equal(t, [4]int{5, 5, 5, 5}, e.state(t))
	})

	t.Run("QueuedStatementsOfAFailingMessageAreUndone", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 3)
		e.exec(t, `UPDATE orders SET status = 'shipped' WHERE id = 'o2'`)
		// The handler queues a transition (refused for o2, which is
		// shipped) and then fails: rolling back to the message's savepoint
		// must discard the queued statement, not send it and fail the
		// batch (found by a fresh-user trial on PostgreSQL).
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: func(ctx context.Context, _ TTx, msg *message.Message) error {
			order := msg.Metadata.Get("order")
			if _, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{Table: "orders", Key: order, From: []string{"pending"}, To: "charging", VersionColumn: "version"},
				&ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + order}); err != nil {
				return err
			}
			if order == "o2" {
				return errors.New("validation failed after queueing")
			}
			return nil
		}})
		res, err := p.Process(ctx, events(3))
		require.NoError(t, err, "one message's queued statement must not fail the batch")
		got := outcomes(res)
		require.Equal(t, applied, got[0])
		require.Equal(t, applied, got[2])
		// Failed where the transition was queued (pgxstore); rejected where
		// it ran at once and the handler returned its refusal (SQLite).
		require.Contains(t, []ackgap.Outcome{failed, rejected}, got[1])
		require.Equal(t, [4]int{2, 2, 2, 2}, e.state(t))
	})

	t.Run("CopyOfAFailingMessageFailsToo", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 2)
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: charge[TTx](func(order string) error {
			if order == "o1" {
				return errors.New("not now")
			}
			return nil
		})})
		msgs := events(2)
		res, err := p.Process(ctx, []*message.Message{msgs[0], msgs[1], event("e1", "o1", `{"order":"o1"}`)})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{failed, applied, failed}, outcomes(res),
			"the copy of e1 is no duplicate of anything applied: it is redelivered with it")
		require.Equal(t, [4]int{1, 1, 1, 1}, e.state(t))
	})

	t.Run("PanicFailsOneMessage", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 3)
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: charge[TTx](func(order string) error {
			if order == "o2" {
				panic("handler bug")
			}
			return nil
		})})
		res, err := p.Process(ctx, events(3))
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied, failed, applied}, outcomes(res))
		require.ErrorContains(t, res.Messages[1].Err, "handler bug")
		require.Equal(t, [4]int{2, 2, 2, 2}, e.state(t))
	})

	t.Run("PermanentErrorRejectsOneMessage", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 2)
		e.exec(t, `UPDATE orders SET status = 'cancelled' WHERE id = 'o2'`)
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: charge[TTx](nil)})
		res, err := p.Process(ctx, events(2))
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied, rejected}, outcomes(res))
		require.ErrorIs(t, res.Messages[1].Err, ackgap.ErrTransitionRefused)
		require.True(t, ackgap.IsPermanent(res.Messages[1].Err))
		require.Equal(t, [4]int{1, 1, 1, 1}, e.state(t), "the rejected message left no inbox row: a redrive applies it")
	})

	t.Run("Duplicates", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 4)
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: charge[TTx](nil)})
		msgs := events(4)
		res, err := p.Process(ctx, []*message.Message{msgs[0], msgs[1], event("e1", "o1", `{"order":"o1"}`)})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied, applied, duplicate}, outcomes(res), "a duplicate inside the batch")
		res, err = p.Process(ctx, []*message.Message{msgs[0], msgs[2], event("e2", "o2", "another payload"), event("e3", "o3", "another payload")})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{duplicate, applied, rejected, rejected}, outcomes(res),
			"a duplicate of an earlier batch; an id reused with another payload, from an earlier batch and from this one")
		require.ErrorIs(t, res.Messages[2].Err, ackgap.ErrEventIDConflict)
		require.Equal(t, ackgap.ReasonEventIDConflict, ackgap.ReasonOf(res.Messages[3].Err))
		require.Equal(t, [4]int{3, 3, 3, 3}, e.state(t), "duplicates changed nothing")

		skip := newProcessor(t, e.store, batch.Config[TTx]{Handler: charge[TTx](nil), InboxConfig: middleware.InboxConfig{PayloadMismatch: middleware.PayloadMismatchSkip}})
		res, err = skip.Process(ctx, []*message.Message{event("e2", "o2", "another payload"), msgs[3], event("e4", "o4", "another payload")})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{duplicate, applied, duplicate}, outcomes(res))
		require.Equal(t, [4]int{4, 4, 4, 4}, e.state(t))

		// Copies of an applied id in one batch are compared with the
		// payload the inbox holds, not with the batch's first copy: the
		// reused one is rejected, the exact copy behind it is a duplicate.
		res, err = p.Process(ctx, []*message.Message{event("e1", "o1", "another payload"), event("e1", "o1", `{"order":"o1"}`)})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{rejected, duplicate}, outcomes(res))
		require.Equal(t, [4]int{4, 4, 4, 4}, e.state(t))
	})

	t.Run("RejectedBeforeTheDatabase", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: charge[TTx](nil), InboxConfig: middleware.InboxConfig{MaxEventIDBytes: 4}})
		res, err := p.Process(ctx, []*message.Message{event("", "o1", "x"), event("e-too-long", "o1", "x"), event("\xff\xfe", "o1", "x"), event("e\x00", "o1", "x")})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{rejected, rejected, rejected, rejected}, outcomes(res))
		require.ErrorIs(t, res.Messages[0].Err, ackgap.ErrMissingEventID)
		require.ErrorIs(t, res.Messages[1].Err, ackgap.ErrEventIDTooLong)
		for _, r := range res.Messages[2:] {
			require.ErrorIs(t, r.Err, ackgap.ErrEventIDInvalid, "not UTF-8, or a NUL: never sent to the database")
			require.Equal(t, ackgap.ReasonEventIDInvalid, ackgap.ReasonOf(r.Err))
		}
		require.True(t, res.Committed.IsZero(), "no transaction for a batch of rejected messages")
		res, err = p.Process(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, res.Messages)
	})

	t.Run("BatchHandler", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 4)
		var calls [][]string
		p := newProcessor(t, e.store, batch.Config[TTx]{BatchHandler: setCharge(e.store, &calls), Handler: charge[TTx](nil)})
		msgs := events(4)
		res, err := p.Process(ctx, []*message.Message{msgs[0], msgs[1], msgs[0]})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied, applied, duplicate}, outcomes(res))
		res, err = p.Process(ctx, []*message.Message{msgs[1], msgs[2], event("", "o9", "x"), msgs[3]})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{duplicate, applied, rejected, applied}, outcomes(res))
		require.NoError(t, res.BatchHandlerErr)
		require.Equal(t, [][]string{{"e1", "e2"}, {"e3", "e4"}}, calls, "called once per batch with the messages to apply")
		require.Equal(t, [4]int{4, 4, 4, 4}, e.state(t))
	})

	t.Run("BatchHandlerFailsFallsBackPerMessage", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 3)
		e.exec(t, `UPDATE orders SET status = 'cancelled' WHERE id = 'o2'`)
		p := newProcessor(t, e.store, batch.Config[TTx]{
			BatchHandler: setCharge(e.store, nil), // refused for o2, after applying o1
			Handler:      charge[TTx](nil),
		})
		res, err := p.Process(ctx, events(3))
		require.NoError(t, err)
		require.ErrorIs(t, res.BatchHandlerErr, ackgap.ErrTransitionRefused)
		require.Equal(t, []ackgap.Outcome{applied, rejected, applied}, outcomes(res))
		require.Equal(t, [4]int{2, 2, 2, 2}, e.state(t), "the batch handler's writes were undone; the per-message handler applied o1 and o3 once")
	})

	t.Run("BatchHandlerFailsWithoutHandler", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 2)
		p := newProcessor(t, e.store, batch.Config[TTx]{BatchHandler: func(ctx context.Context, tx TTx, msgs []*message.Message) error {
			if err := setCharge(e.store, nil)(ctx, tx, msgs); err != nil {
				return err
			}
			panic("set-based bug")
		}})
		res, err := p.Process(ctx, events(2))
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{failed, failed}, outcomes(res))
		require.ErrorContains(t, res.Messages[0].Err, "set-based bug")
		require.Equal(t, [4]int{0, 0, 0, 0}, e.state(t), "nothing applied, no inbox rows: the redelivery applies them")
	})

	t.Run("ConcurrentBatchesShareEventIDs", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 6)
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: charge[TTx](nil)})
		msgs := events(6)
		batches := [][]*message.Message{
			{msgs[0], msgs[1], msgs[2], msgs[3]},
			{msgs[3], msgs[2], msgs[4], msgs[5]},
			{msgs[5], msgs[0], msgs[2]},
		}
		results := make([]*batch.Result, len(batches))
		errs := make([]error, len(batches))
		var wg sync.WaitGroup
		for i, b := range batches {
			copies := make([]*message.Message, len(b))
			for j, m := range b {
				copies[j] = m.Copy()
			}
			wg.Go(func() { results[i], errs[i] = p.Process(ctx, copies) })
		}
		wg.Wait()
		appliedBy := map[string]int{}
		for i, res := range results {
			require.NoError(t, errs[i])
			for _, m := range res.Messages {
				require.Contains(t, []ackgap.Outcome{applied, duplicate}, m.Outcome)
				if m.Outcome == applied {
					appliedBy[m.EventID]++
				}
			}
		}
		require.Equal(t, map[string]int{"e1": 1, "e2": 1, "e3": 1, "e4": 1, "e5": 1, "e6": 1}, appliedBy, "each event applied by exactly one batch")
		require.Equal(t, [4]int{6, 6, 6, 6}, e.state(t))
	})

	t.Run("FailedCommitAcksNothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 3)
		// A deferred constraint is checked at COMMIT: a handler that breaks
		// it makes the commit itself fail.
		e.exec(t, `CREATE TABLE parents (id TEXT PRIMARY KEY)`)
		e.exec(t, `CREATE TABLE children (id TEXT PRIMARY KEY, parent TEXT REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)`)
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: func(ctx context.Context, tx TTx, msg *message.Message) error {
			if err := charge[TTx](nil)(ctx, tx, msg); err != nil {
				return err
			}
			if msg.Metadata.Get("order") != "o2" {
				return nil
			}
			err := ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "noop", IdempotencyKey: "noop"})
			if err != nil {
				return err
			}
			return execTx(ctx, tx, `INSERT INTO children (id, parent) VALUES ('c1', 'missing')`)
		}})
		msgs := events(3)
		res, err := p.Process(ctx, msgs)
		require.ErrorContains(t, err, "commit")
		require.Equal(t, []ackgap.Outcome{failed, failed, failed}, outcomes(res), "no message is acked")
		require.True(t, res.Committed.IsZero())
		require.Equal(t, [4]int{0, 0, 0, 0}, e.state(t), "nothing committed, inbox rows included: all are redelivered")

		ok := newProcessor(t, e.store, batch.Config[TTx]{Handler: charge[TTx](nil)})
		res, err = ok.Process(ctx, msgs)
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied, applied, applied}, outcomes(res), "their redelivery applies them")
	})

	t.Run("CancelledContextAcksNothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 2)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		p := newProcessor(t, e.store, batch.Config[TTx]{BatchHandler: func(ctx context.Context, tx TTx, msgs []*message.Message) error {
			err := setCharge(e.store, nil)(ctx, tx, msgs)
			cancel()
			return err
		}})
		res, err := p.Process(cctx, events(2))
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, []ackgap.Outcome{failed, failed}, outcomes(res))
		require.Equal(t, [4]int{0, 0, 0, 0}, e.state(t))
	})

	t.Run("MessageContextValues", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.orders(t, 1)
		type key struct{}
		var seen any
		p := newProcessor(t, e.store, batch.Config[TTx]{Handler: func(ctx context.Context, tx TTx, msg *message.Message) error {
			seen = ctx.Value(key{})
			return nil
		}})
		msg := events(1)[0]
		msgCtx := context.WithValue(ctx, key{}, "from the broker")
		msg.SetContext(msgCtx)
		_, err := p.Process(ctx, []*message.Message{msg})
		require.NoError(t, err)
		require.Equal(t, "from the broker", seen, "the handler sees the message context's values")
		require.Equal(t, msgCtx, msg.Context(), "the message's context is restored")
	})
}

// keyed returns event id of key k's seq-th step, with the key in
// metadata "key" (keyedOf reads it).
func keyed(id, key string, seq int) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(fmt.Sprintf("%s,%d", key, seq)))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, id)
	msg.Metadata.Set("key", key)
	msg.Metadata.Set("seq", strconv.Itoa(seq))
	return msg
}

func keyedOf(msg *message.Message) (string, bool) {
	k := msg.Metadata.Get("key")
	return k, k != ""
}

// seqTable adds the per-key sequence table of keys k1..kn, each at 0.
func (e *env[TTx]) seqTable(t *testing.T, n int) {
	e.exec(t, `CREATE TABLE key_seq (key TEXT PRIMARY KEY, seq INTEGER NOT NULL)`)
	for i := range n {
		e.exec(t, fmt.Sprintf(`INSERT INTO key_seq VALUES ('k%d', 0)`, i+1))
	}
}

// seqs returns every key's committed sequence, as "k1=3 k2=1 ...".
func (e *env[TTx]) seqs(t *testing.T, n int) string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("k%d=%d", i+1, e.count(t, fmt.Sprintf(`SELECT seq FROM key_seq WHERE key = 'k%d'`, i+1)))
	}
	return strings.Join(out, " ")
}

// step moves msg's key from seq-1 to seq, and fails when the key is not
// at seq-1 (a step out of its key's order, or applied twice).
func step[TTx any](ctx context.Context, tx TTx, msg *message.Message) error {
	n, err := execTxN(ctx, tx, `UPDATE key_seq SET seq = seq + 1 WHERE key = '`+msg.Metadata.Get("key")+`' AND seq = `+msg.Metadata.Get("seq")+` - 1`)
	if err != nil {
		return err
	}
	if n != 1 {
		return ackgap.Permanent("", fmt.Errorf("step %s of %s out of order", msg.Metadata.Get("seq"), msg.Metadata.Get("key")))
	}
	return nil
}

// roundRecorder is a BatchHandler stepping every message of a call and
// recording the event ids of each call; a call holding one key twice is
// recorded in twice.
type roundRecorder[TTx any] struct {
	calls [][]string
	twice []string
	fail  func(msg *message.Message) error // may fail the call, after its steps
}

func (rr *roundRecorder[TTx]) handle(ctx context.Context, tx TTx, msgs []*message.Message) error {
	ids := make([]string, len(msgs))
	seen := map[string]bool{}
	for i, msg := range msgs {
		ids[i] = msg.Metadata.Get(ackgap.MetadataEventIDKey)
		if k := msg.Metadata.Get("key"); seen[k] {
			rr.twice = append(rr.twice, k)
		} else {
			seen[k] = true
		}
		if err := step(ctx, tx, msg); err != nil {
			return err
		}
	}
	rr.calls = append(rr.calls, ids)
	for _, msg := range msgs {
		if rr.fail != nil {
			if err := rr.fail(msg); err != nil {
				return err
			}
		}
	}
	return nil
}

func roundsSuite[TTx any](t *testing.T, newEnv func(t *testing.T) *env[TTx]) {
	ctx := context.Background()

	t.Run("RoundsApplyEachKeyInOrder", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.seqTable(t, 3)
		rr := &roundRecorder[TTx]{}
		p := newProcessor(t, e.store, batch.Config[TTx]{BatchHandler: rr.handle, KeyOf: keyedOf})
		msgs := []*message.Message{
			keyed("a1", "k1", 1), keyed("b1", "k2", 1), keyed("a2", "k1", 2), keyed("c1", "k3", 1),
			keyed("a3", "k1", 3), keyed("b2", "k2", 2),
		}
		res, err := p.Process(ctx, msgs)
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied, applied, applied, applied, applied, applied}, outcomes(res))
		require.Equal(t, 3, res.Rounds)
		require.Equal(t, [][]string{{"a1", "b1", "c1"}, {"a2", "b2"}, {"a3"}}, rr.calls,
			"one call per round: the first message of each key, then the second, ...")
		require.Empty(t, rr.twice, "a BatchHandler call never holds one key twice")
		require.Equal(t, "k1=3 k2=2 k3=1", e.seqs(t, 3))
		require.Equal(t, 6, e.count(t, `SELECT count(*) FROM ackgap_inbox`))

		// Without keys (no KeyOf, no Delivery) every message is its own
		// key: one round, as before.
		e2 := newEnv(t)
		e2.orders(t, 3)
		var calls [][]string
		p2 := newProcessor(t, e2.store, batch.Config[TTx]{BatchHandler: setCharge(e2.store, &calls)})
		res, err = p2.Process(ctx, events(3))
		require.NoError(t, err)
		require.Equal(t, 1, res.Rounds)
		require.Equal(t, [][]string{{"e1", "e2", "e3"}}, calls)
	})

	t.Run("KeyFromDelivery", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.seqTable(t, 2)
		rr := &roundRecorder[TTx]{}
		p := newProcessor(t, e.store, batch.Config[TTx]{BatchHandler: rr.handle}) // KeyOf nil: the Delivery's key
		msgs := []*message.Message{keyed("a1", "k1", 1), keyed("a2", "k1", 2), keyed("b1", "k2", 1)}
		for _, m := range msgs {
			m.SetContext(ackgap.WithDelivery(m.Context(), &ackgap.Delivery{Key: m.Metadata.Get("key"), HasKey: true}))
		}
		res, err := p.Process(ctx, msgs)
		require.NoError(t, err)
		require.Equal(t, 2, res.Rounds)
		require.Equal(t, [][]string{{"a1", "b1"}, {"a2"}}, rr.calls)
		require.Equal(t, "k1=2 k2=1", e.seqs(t, 2))
	})

	t.Run("FailureHoldsBackItsKey", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.seqTable(t, 3)
		down := true
		var seen []string
		p := newProcessor(t, e.store, batch.Config[TTx]{KeyOf: keyedOf, Handler: func(ctx context.Context, tx TTx, msg *message.Message) error {
			seen = append(seen, msg.Metadata.Get(ackgap.MetadataEventIDKey))
			if err := step(ctx, tx, msg); err != nil {
				return err
			}
			if msg.Metadata.Get(ackgap.MetadataEventIDKey) == "a1" && down {
				return errors.New("card processor down") // after the step: the rollback undoes it
			}
			return nil
		}})
		msgs := []*message.Message{
			keyed("a1", "k1", 1), keyed("b1", "k2", 1), keyed("a2", "k1", 2), keyed("b2", "k2", 2),
			keyed("a3", "k1", 3), keyed("c1", "k3", 1),
		}
		res, err := p.Process(ctx, msgs)
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{failed, applied, failed, applied, failed, applied}, outcomes(res))
		require.ErrorContains(t, res.Messages[0].Err, "card processor down")
		for _, i := range []int{2, 4} {
			require.ErrorIs(t, res.Messages[i].Err, batch.ErrHeldBack, "k1's later messages wait for a1")
			require.ErrorContains(t, res.Messages[i].Err, `"a1"`)
			require.True(t, res.Messages[i].HandlerStarted.IsZero(), "a held-back message never reached a handler")
		}
		require.Equal(t, []string{"a1", "b1", "c1", "b2"}, seen, "round 1, then round 2 without k1")
		require.Equal(t, 2, res.Rounds, "round 3 held only a3, held back")
		require.Equal(t, "k1=0 k2=2 k3=1", e.seqs(t, 3))
		require.Equal(t, 3, e.count(t, `SELECT count(*) FROM ackgap_inbox`), "no inbox row for the failed and held-back messages")

		// Their redelivery, in order, applies them all.
		down = false
		res, err = p.Process(ctx, []*message.Message{msgs[0], msgs[2], msgs[4]})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied, applied, applied}, outcomes(res))
		require.Equal(t, 3, res.Rounds)
		require.Equal(t, "k1=3 k2=2 k3=1", e.seqs(t, 3))
	})

	t.Run("FailureInALaterRoundAfterTheBatchHandlerFails", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.seqTable(t, 2)
		// The set-based handler fails round 2 (it holds b2); the
		// per-message fallback rejects b2 and applies a2; b3 is held back,
		// a3 applies in round 3 through the BatchHandler.
		rr := &roundRecorder[TTx]{fail: func(msg *message.Message) error {
			if msg.Metadata.Get(ackgap.MetadataEventIDKey) == "b2" {
				return errors.New("set-based: b2 is invalid")
			}
			return nil
		}}
		p := newProcessor(t, e.store, batch.Config[TTx]{KeyOf: keyedOf, BatchHandler: rr.handle,
			Handler: func(ctx context.Context, tx TTx, msg *message.Message) error {
				if msg.Metadata.Get(ackgap.MetadataEventIDKey) == "b2" {
					return ackgap.Permanent(ackgap.ReasonInvalidData, errors.New("b2 is invalid"))
				}
				return step(ctx, tx, msg)
			}})
		msgs := []*message.Message{
			keyed("a1", "k1", 1), keyed("b1", "k2", 1), keyed("a2", "k1", 2), keyed("b2", "k2", 2),
			keyed("a3", "k1", 3), keyed("b3", "k2", 3),
		}
		res, err := p.Process(ctx, msgs)
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied, applied, applied, rejected, applied, failed}, outcomes(res))
		require.ErrorContains(t, res.BatchHandlerErr, "b2 is invalid")
		require.ErrorIs(t, res.Messages[5].Err, batch.ErrHeldBack)
		require.Equal(t, 3, res.Rounds)
		require.Equal(t, [][]string{{"a1", "b1"}, {"a2", "b2"}, {"a3"}}, rr.calls,
			"round 2's call is recorded though it was undone; round 3 without k2")
		require.Empty(t, rr.twice)
		require.Equal(t, "k1=3 k2=1", e.seqs(t, 2), "round 2's set-based writes were undone, a2 applied once")
		require.Equal(t, 4, e.count(t, `SELECT count(*) FROM ackgap_inbox`))
	})

	t.Run("DuplicateHoldsNothingBack", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.seqTable(t, 1)
		rr := &roundRecorder[TTx]{}
		p := newProcessor(t, e.store, batch.Config[TTx]{KeyOf: keyedOf, BatchHandler: rr.handle})
		res, err := p.Process(ctx, []*message.Message{keyed("a1", "k1", 1)})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{applied}, outcomes(res))
		res, err = p.Process(ctx, []*message.Message{keyed("a1", "k1", 1), keyed("a2", "k1", 2), keyed("a2", "k1", 2), keyed("a3", "k1", 3)})
		require.NoError(t, err)
		require.Equal(t, []ackgap.Outcome{duplicate, applied, duplicate, applied}, outcomes(res))
		require.Equal(t, 2, res.Rounds, "a duplicate takes no round")
		require.Equal(t, "k1=3", e.seqs(t, 1))
	})
}

// execTxN runs one statement in tx, whatever the store, and returns the
// rows it changed.
func execTxN(ctx context.Context, tx any, q string) (int64, error) {
	switch tx := tx.(type) {
	case pgx.Tx:
		tag, err := tx.Exec(ctx, q)
		return tag.RowsAffected(), err
	case *sql.Tx:
		r, err := tx.ExecContext(ctx, q)
		if err != nil {
			return 0, err
		}
		return r.RowsAffected()
	}
	return 0, fmt.Errorf("unknown transaction type %T", tx)
}

// execTx runs one statement in tx, whatever the store.
func execTx(ctx context.Context, tx any, q string) error {
	switch tx := tx.(type) {
	case pgx.Tx:
		_, err := tx.Exec(ctx, q)
		return err
	case *sql.Tx:
		_, err := tx.ExecContext(ctx, q)
		return err
	}
	return fmt.Errorf("unknown transaction type %T", tx)
}

func TestConfig(t *testing.T) {
	_, err := batch.New[*sql.Tx](nil, nil)
	require.ErrorContains(t, err, "invalid config")
	store := sqliteEnv(t).store
	_, err = batch.New(store, &batch.Config[*sql.Tx]{InboxConfig: middleware.InboxConfig{MaxEventIDBytes: -1, PayloadMismatch: 7, RollbackTimeout: -1}})
	for _, want := range []string{"Consumer is empty", "Handler and BatchHandler are nil", "MaxEventIDBytes is -1", "PayloadMismatch 7", "RollbackTimeout is -1ns"} {
		require.ErrorContains(t, err, want)
	}
	_, err = batch.New(store, &batch.Config[*sql.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "billing"}, BatchHandler: func(context.Context, *sql.Tx, []*message.Message) error { return nil }})
	require.NoError(t, err)
}

// TestQueuedTransitionOnMissingTablePostgres: a message whose handler
// queues a transition on a table that does not exist (a deploy mistake)
// fails alone; the batch's other messages, queued the same way, commit.
// Its SAVEPOINT is sent ahead of a transition that never ran, so the
// statement's failure to prepare does not take the savepoint with it.
func TestQueuedTransitionOnMissingTablePostgres(t *testing.T) {
	e := pgEnv(t)
	e.orders(t, 3)
	p, err := batch.New(e.store, &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing"},
		Handler: func(ctx context.Context, _ pgx.Tx, msg *message.Message) error {
			table := "orders"
			if msg.Metadata.Get("order") == "o2" {
				table = "no_such_orders"
			}
			_, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{Table: table, Key: msg.Metadata.Get("order"),
				From: []string{"pending"}, To: "charging", VersionColumn: "version"})
			return err
		},
	})
	require.NoError(t, err)
	for range 2 { // the second time, the good transition's text has run once
		e.exec(t, `UPDATE orders SET status = 'pending', version = 0`)
		e.exec(t, `DELETE FROM ackgap_inbox`)
		res, err := p.Process(context.Background(), events(3))
		require.NoError(t, err, "the batch commits")
		require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeFailed, ackgap.OutcomeApplied},
			[]ackgap.Outcome{res.Messages[0].Outcome, res.Messages[1].Outcome, res.Messages[2].Outcome})
		require.ErrorIs(t, res.Messages[1].Err, ackgap.ErrStoreMisconfigured)
		require.Equal(t, 2, e.count(t, `SELECT count(*) FROM orders WHERE status = 'charging'`))
	}
}
