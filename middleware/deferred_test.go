package middleware_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// pgSetup returns an inbox middleware on PostgreSQL, whose store defers
// the inbox insert to the handler's first statement, the pool (orders
// holding o1, pending) and the reports it made.
func pgSetup(t *testing.T) (message.HandlerMiddleware, *pgxpool.Pool, *[]ackgap.InboxReport) {
	t.Helper()
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 0)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL, version int NOT NULL DEFAULT 0);
INSERT INTO orders VALUES ('o1', 'pending')`)
	require.NoError(t, err)
	var reports []ackgap.InboxReport
	inbox, err := middleware.Inbox[pgx.Tx](store, &middleware.InboxConfig{Consumer: "c1",
		Observer: func(_ context.Context, r *ackgap.InboxReport) { reports = append(reports, *r) }})
	require.NoError(t, err)
	return inbox, pool, &reports
}

// TestDeferredDuplicateWhateverTheHandlerReturns: on a store that sends
// the inbox insert with the handler's first statement, the handler of a
// duplicate runs, its statement fails with ackgap.ErrDuplicate and is
// undone, and the message is acked as a duplicate whether the handler
// returns that error, swallows it, or returns another one. The report
// carries the first delivery's traceparent.
func TestDeferredDuplicateWhateverTheHandlerReturns(t *testing.T) {
	inbox, pool, reports := pgSetup(t)
	ctx := context.Background()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var stmtErrs []error
	handler := func(ret func(error) error) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			tx, _ := pgxstore.TxFromContext(msg.Context())
			_, err := tx.Exec(msg.Context(), `UPDATE orders SET version = version + 1 WHERE id = $1`, "o1")
			stmtErrs = append(stmtErrs, err)
			return []*message.Message{message.NewMessage("out", nil)}, ret(err)
		}
	}
	first := event("e1", `{}`)
	first.SetContext(ackgap.WithTraceParent(first.Context(), tp))
	_, err := inbox(handler(func(err error) error { return err }))(first)
	require.NoError(t, err)

	for i, ret := range []func(error) error{
		func(err error) error { return err },
		func(error) error { return nil },
		func(error) error { return errors.New("something else") },
	} {
		produced, err := inbox(handler(ret))(event("e1", `{}`))
		require.NoError(t, err, "copy %d is acked", i)
		require.Empty(t, produced, "a duplicate produces nothing")
		require.ErrorIs(t, stmtErrs[len(stmtErrs)-1], ackgap.ErrDuplicate)
		rep := (*reports)[len(*reports)-1]
		require.Equal(t, ackgap.OutcomeDuplicate, rep.Outcome)
		require.Equal(t, tp, rep.FirstTraceParent)
	}
	var version int
	require.NoError(t, pool.QueryRow(ctx, `SELECT version FROM orders`).Scan(&version))
	require.Equal(t, 1, version, "only the first delivery's UPDATE committed")
	require.Zero(t, pool.Stat().AcquiredConns())

	// The same id with another payload is rejected, not skipped.
	_, err = inbox(handler(func(err error) error { return err }))(event("e1", `{"other":true}`))
	require.ErrorIs(t, err, ackgap.ErrEventIDConflict)
	require.True(t, ackgap.IsPermanent(err))
	require.Equal(t, ackgap.OutcomeRejected, (*reports)[len(*reports)-1].Outcome)
}

// TestDeferredHandlerFailsBeforeAnyStatement: a handler that fails before
// sending anything leaves no inbox row; the redelivery applies.
func TestDeferredHandlerFailsBeforeAnyStatement(t *testing.T) {
	inbox, pool, reports := pgSetup(t)
	ctx := context.Background()
	boom := errors.New("boom")
	_, err := inbox(func(*message.Message) ([]*message.Message, error) { return nil, boom })(event("e1", `{}`))
	require.ErrorIs(t, err, boom)
	require.Equal(t, ackgap.OutcomeFailed, (*reports)[0].Outcome)
	_, err = inbox(func(msg *message.Message) ([]*message.Message, error) {
		pending, err := ackgap.ApplyTransition(msg.Context(), &ackgap.Transition{Table: "orders", Key: "o1", From: []string{"pending"}, To: "charging"})
		if err != nil {
			return nil, err
		}
		_, err = pending.Result(msg.Context())
		return nil, err
	})(event("e1", `{}`))
	require.NoError(t, err)
	require.Equal(t, ackgap.OutcomeApplied, (*reports)[1].Outcome)
	var status string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM orders`).Scan(&status))
	require.Equal(t, "charging", status)
	require.Zero(t, pool.Stat().AcquiredConns())
}
