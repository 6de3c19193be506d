package router_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// TestDeployMistakeIsNeverDeadLettered: a store never migrated (ackgap's
// tables missing) on either database, and a handler whose own table is
// missing, mean the deploy is wrong, not the message: the message is
// nacked as store-unavailable and redelivered, never dead-lettered.
func TestDeployMistakeIsNeverDeadLettered(t *testing.T) {
	cfg := func(logger watermill.LoggerAdapter) router.Config {
		return router.Config{Logger: logger, MaxAttempts: 2, RetryInitialInterval: time.Millisecond, RetryMaxInterval: time.Millisecond}
	}
	check := func(t *testing.T, h message.HandlerFunc, sink *logSink) {
		t.Helper()
		_, err := h(newMsg("e-deploy", `{}`))
		require.ErrorIs(t, err, ackgap.ErrStoreUnavailable)
		require.ErrorIs(t, err, ackgap.ErrStoreMisconfigured, "says what to fix")
		require.False(t, ackgap.IsPermanent(err))
		require.Len(t, sink.records(t, router.LogNackStoreUnavailable), 1)
		require.Empty(t, sink.records(t, router.LogDeadLettered), "a deploy mistake is never dead-lettered")
	}

	t.Run("sqlite not migrated", func(t *testing.T) {
		store, err := sqlitestore.Open(context.Background(), testdb.SQLitePath(t), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		sink, logger := newSink()
		check(t, chain(t, store, cfg(logger), func(context.Context, *sql.Tx, *message.Message) error { return nil }), sink)
	})
	t.Run("postgres not migrated", func(t *testing.T) {
		pool, _ := testdb.Schema(t, 4)
		store, err := pgxstore.New(pool, nil)
		require.NoError(t, err)
		sink, logger := newSink()
		check(t, chain(t, store, cfg(logger), func(ctx context.Context, tx pgx.Tx, _ *message.Message) error {
			_, err := tx.Exec(ctx, `SELECT 1`)
			return err
		}), sink)
	})
	t.Run("sqlite handler table missing", func(t *testing.T) {
		sink, logger := newSink()
		check(t, chain(t, sqliteStore(t), cfg(logger), func(ctx context.Context, tx *sql.Tx, _ *message.Message) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO orders_not_migrated VALUES (1)`)
			return err
		}), sink)
	})
	t.Run("postgres handler column missing", func(t *testing.T) {
		store, _ := pgSetup(t)
		sink, logger := newSink()
		check(t, chain(t, store, cfg(logger), func(ctx context.Context, tx pgx.Tx, _ *message.Message) error {
			_, err := tx.Exec(ctx, `SELECT column_from_a_later_release FROM ackgap_inbox`)
			return err
		}), sink)
	})
}

// publishFunc is a message.Publisher made of a function.
type publishFunc func(topic string, msgs ...*message.Message) error

func (f publishFunc) Publish(topic string, msgs ...*message.Message) error { return f(topic, msgs...) }
func (publishFunc) Close() error                                           { return nil }

// TestLogsDeadLetterOnlyOncePublished: the dead letter is logged after the
// dead-letter publish succeeded, never before; a failed publish is logged
// as what it is (error, with destination and the publish error), and the
// message is nacked, not reported dead-lettered.
func TestLogsDeadLetterOnlyOncePublished(t *testing.T) {
	sink, logger := newSink()
	var loggedBefore []map[string]any
	published := publishFunc(func(string, ...*message.Message) error {
		loggedBefore = sink.records(t, router.LogDeadLettered)
		return nil
	})
	h := chain(t, sqliteStore(t), router.Config{Logger: logger, DeadLetter: published}, func(context.Context, *sql.Tx, *message.Message) error {
		return ackgap.Permanent("account_closed", nil)
	})
	_, err := h(newMsg("e-published", secretPayload))
	require.NoError(t, err)
	require.Empty(t, loggedBefore, "not logged before the publish")
	dead := sink.records(t, router.LogDeadLettered)
	require.Len(t, dead, 1)
	require.Equal(t, "e-published", dead[0]["event_id"])
	require.Equal(t, "account_closed", dead[0]["reason"])
	require.Empty(t, sink.records(t, router.LogDeadLetterFailed))

	sink, logger = newSink()
	failing := publishFunc(func(string, ...*message.Message) error { return errors.New("broker down: connection refused") })
	h = chain(t, sqliteStore(t), router.Config{Logger: logger, DeadLetter: failing, DeadLetterTopic: "orders.dead"}, func(context.Context, *sql.Tx, *message.Message) error {
		return ackgap.Permanent("account_closed", nil)
	})
	for range 2 { // redelivered: each delivery logs its own failure
		_, err = h(newMsg("e-unpublished", secretPayload))
		require.ErrorContains(t, err, "broker down", "nacked")
	}
	require.Empty(t, sink.records(t, router.LogDeadLettered), "never reported dead-lettered")
	failed := sink.records(t, router.LogDeadLetterFailed)
	require.Len(t, failed, 2)
	for _, r := range failed {
		require.Equal(t, "ERROR", r["level"])
		require.Equal(t, "e-unpublished", r["event_id"])
		require.Equal(t, "orders.dead", r["destination"])
		require.Equal(t, "account_closed", r["reason"])
		require.Contains(t, r["publish_err"], "broker down: connection refused")
	}
	require.NotContains(t, sink.text(), "4242-SECRET-CARD")

	// A message the dead-letter broker cannot encode: the sanitised copy's
	// publish is the dead letter, logged as such; when the copy fails too,
	// the failure is logged with both errors.
	ps := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	for _, c := range []struct {
		max       int
		published bool
	}{{8, true}, {1, false}} {
		sink, logger = newSink()
		h = chain(t, sqliteStore(t), router.Config{Logger: logger, DeadLetter: limitedPublisher{Publisher: ps, max: c.max}},
			func(context.Context, *sql.Tx, *message.Message) error { return ackgap.Permanent("account_closed", nil) })
		_, err = h(wideMessage())
		if c.published {
			require.NoError(t, err)
			dead := sink.records(t, router.LogDeadLettered)
			require.Len(t, dead, 1)
			require.Contains(t, dead[0]["sanitized"], "at most 8")
			require.Empty(t, sink.records(t, router.LogDeadLetterFailed))
			continue
		}
		require.ErrorIs(t, err, ackgap.ErrUnencodable)
		require.Empty(t, sink.records(t, router.LogDeadLettered))
		failed := sink.records(t, router.LogDeadLetterFailed)
		require.Len(t, failed, 1)
		require.Contains(t, failed[0]["publish_err"], "the sanitised copy failed too")
	}
}

// TestWatermillNackLogIsWarn: with router.New, Watermill's own "Handler
// returned error" for a message ackgap nacks for redelivery (here: a store
// never migrated) is logged at warn, not error; and Run says loudly, once,
// that the store's schema is behind.
func TestWatermillNackLogIsWarn(t *testing.T) {
	store, err := sqlitestore.Open(context.Background(), testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sink := &logSink{}
	logger := router.SlogLogger(slog.New(slog.NewJSONHandler(sink, nil)))
	ps := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	r, err := router.New[*sql.Tx](store, &router.Config{DeadLetter: ps, Logger: logger, MaxAttempts: 1})
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("billing", "orders", ps, func(context.Context, *sql.Tx, *message.Message) error { return nil }))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-r.Running()
	require.NoError(t, ps.Publish("orders", newMsg("e-nack", `{}`)))
	require.Eventually(t, func() bool { return len(sink.records(t, "Handler returned error")) > 0 }, 30*time.Second, 5*time.Millisecond)
	require.NoError(t, r.Close())
	require.NoError(t, <-done)
	for _, rec := range sink.records(t, "Handler returned error") {
		require.Equal(t, "WARN", rec["level"], "%v", rec)
	}
	require.Empty(t, sink.records(t, router.LogDeadLettered))
	behind := sink.records(t, router.LogSchemaBehind)
	require.Len(t, behind, 1)
	require.Equal(t, "ERROR", behind[0]["level"])
	require.EqualValues(t, 0, behind[0]["version"])
	require.NotZero(t, behind[0]["pending"])
	require.Contains(t, behind[0]["error"], "migrations pending", "the error field says what is behind, not <nil>")
}

// TestMigratedStoreRunsQuietly: on a migrated store Run logs no schema
// warning.
func TestMigratedStoreRunsQuietly(t *testing.T) {
	sink := &logSink{}
	logger := router.SlogLogger(slog.New(slog.NewJSONHandler(sink, nil)))
	ps := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	r, err := router.New[*sql.Tx](sqliteStore(t), &router.Config{DeadLetter: ps, Logger: logger})
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("billing", "orders", ps, func(context.Context, *sql.Tx, *message.Message) error { return nil }))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-r.Running()
	require.NoError(t, r.Close())
	require.NoError(t, <-done)
	require.Empty(t, sink.records(t, router.LogSchemaBehind))
}
