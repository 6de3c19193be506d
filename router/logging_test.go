package router_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// secretPayload must never appear in a log line.
const secretPayload = `{"order_id":"o1","card":"4242-SECRET-CARD"`

// logSink collects slog JSON records.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// records returns the records whose msg is msg.
func (s *logSink) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.text()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func newSink() (*logSink, watermill.LoggerAdapter) {
	s := &logSink{}
	return s, router.SlogLogger(slog.New(slog.NewJSONHandler(s, &slog.HandlerOptions{Level: watermill.LevelTrace})))
}

// chain builds the router's chain for consumer "billing" around h, as a
// Watermill router would run it; cfg.DeadLetter defaults to a GoChannel.
func chain[TTx any](t *testing.T, store stores.Store[TTx], cfg router.Config, h router.HandlerFunc[TTx]) message.HandlerFunc {
	t.Helper()
	if cfg.DeadLetter == nil {
		dead := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
		t.Cleanup(func() { _ = dead.Close() })
		cfg.DeadLetter = dead
	}
	mws, err := router.Middlewares(store, "billing", &cfg)
	require.NoError(t, err)
	hf := router.Adapt(h)
	for i := len(mws) - 1; i >= 0; i-- {
		hf = mws[i](hf)
	}
	return hf
}

func sqliteStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	store, err := sqlitestore.Open(context.Background(), testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	return store
}

func newMsg(eventID, payload string) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(payload))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
	return msg
}

// TestLogsDeadLetterAndRetries: retries are logged at warn with attempt
// and backoff, the dead letter at error with event id, consumer, reason
// and destination; the payload is never logged.
func TestLogsDeadLetterAndRetries(t *testing.T) {
	sink, logger := newSink()
	attempts := 0
	h := chain(t, sqliteStore(t), router.Config{Logger: logger, MaxAttempts: 3}, func(context.Context, *sql.Tx, *message.Message) error {
		attempts++
		return errors.New("payment gateway: 503")
	})
	_, err := h(newMsg("e-exhausted", secretPayload))
	require.NoError(t, err, "a dead-lettered message is acked")
	require.Equal(t, 3, attempts)

	retries := sink.records(t, router.LogRetrying)
	require.Len(t, retries, 2, "attempts 1 and 2 are retried; the third is the last")
	for i, r := range retries {
		require.Equal(t, "WARN", r["level"])
		require.Equal(t, "e-exhausted", r["event_id"])
		require.Equal(t, "billing", r["consumer"])
		require.EqualValues(t, i+1, r["attempt"])
		require.EqualValues(t, 3, r["max_attempts"])
		require.NotEmpty(t, r["backoff"])
		require.Contains(t, r["err"], "payment gateway: 503")
	}
	dead := sink.records(t, router.LogDeadLettered)
	require.Len(t, dead, 1)
	require.Equal(t, "ERROR", dead[0]["level"])
	require.Equal(t, "e-exhausted", dead[0]["event_id"])
	require.Equal(t, "billing", dead[0]["consumer"])
	require.Equal(t, ackgap.ReasonAttemptsExhausted, dead[0]["reason"])
	require.Equal(t, router.DeadLetterTopicDefault, dead[0]["destination"])
	require.EqualValues(t, 3, dead[0]["attempts"])

	// A payload that does not parse: permanent, one attempt, its reason.
	bad := chain(t, sqliteStore(t), router.Config{Logger: logger}, router.JSON(func(context.Context, *sql.Tx, *message.Message, order) error { return nil }))
	_, err = bad(newMsg("e-bad", secretPayload))
	require.NoError(t, err)
	dead = sink.records(t, router.LogDeadLettered)
	require.Len(t, dead, 2)
	require.Equal(t, "e-bad", dead[1]["event_id"])
	require.Equal(t, ackgap.ReasonBadPayload, dead[1]["reason"])
	require.EqualValues(t, 1, dead[1]["attempts"])

	require.NotContains(t, sink.text(), "4242-SECRET-CARD", "payloads are never logged")
}

// TestLogsNacks: a nack for shutdown and a nack for an unavailable store
// are logged at warn, and neither is dead-lettered; a DSN password never
// appears in the logs, even when the database cannot be reached.
func TestLogsNacks(t *testing.T) {
	sink, logger := newSink()
	h := chain(t, sqliteStore(t), router.Config{Logger: logger}, func(context.Context, *sql.Tx, *message.Message) error {
		return fmt.Errorf("stopping: %w", context.Canceled)
	})
	_, err := h(newMsg("e-shutdown", secretPayload))
	require.ErrorIs(t, err, context.Canceled)
	nacks := sink.records(t, router.LogNackShutdown)
	require.Len(t, nacks, 1)
	require.Equal(t, "WARN", nacks[0]["level"])
	require.Equal(t, "e-shutdown", nacks[0]["event_id"])
	require.Empty(t, sink.records(t, router.LogDeadLettered))

	// A pool with a password in its DSN, on a port where nothing listens.
	const password = "s3cret-Passw0rd"
	pool, err := pgxpool.New(context.Background(), "postgres://app:"+password+"@127.0.0.1:1/test?connect_timeout=5")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	down := chain(t, store, router.Config{Logger: logger, MaxAttempts: 2}, func(context.Context, pgx.Tx, *message.Message) error { return nil })
	_, err = down(newMsg("e-down", secretPayload))
	require.ErrorIs(t, err, ackgap.ErrStoreUnavailable)
	unavailable := sink.records(t, router.LogNackStoreUnavailable)
	require.Len(t, unavailable, 1)
	require.Equal(t, "e-down", unavailable[0]["event_id"])
	require.Len(t, sink.records(t, router.LogRetrying), 1, "the store is tried again in place first")
	require.Empty(t, sink.records(t, router.LogDeadLettered), "a busy database means redeliver, never dead-letter")

	require.NotContains(t, sink.text(), password)
	require.NotContains(t, sink.text(), "4242-SECRET-CARD")
}

// TestLogsUnconfirmedAck: an ack the broker adapter reports unconfirmed is
// logged at warn with the event id; a confirmed one is not.
func TestLogsUnconfirmedAck(t *testing.T) {
	sink, logger := newSink()
	h := chain(t, sqliteStore(t), router.Config{Logger: logger}, func(context.Context, *sql.Tx, *message.Message) error { return nil })
	deliver := func(eventID string) *ackgap.Delivery {
		d := &ackgap.Delivery{Confirmation: ackgap.ConfirmationReported}
		msg := newMsg(eventID, secretPayload)
		msg.SetContext(ackgap.WithDelivery(msg.Context(), d))
		_, err := h(msg)
		require.NoError(t, err)
		return d
	}
	deliver("e-unconfirmed").Settle(ackgap.Settlement{Acked: true, Err: fmt.Errorf("%w: receipt handle expired", ackgap.ErrAckNotConfirmed)})
	deliver("e-confirmed").Settle(ackgap.Settlement{Acked: true})

	recs := sink.records(t, router.LogAckUnconfirmed)
	require.Len(t, recs, 1)
	require.Equal(t, "WARN", recs[0]["level"])
	require.Equal(t, "e-unconfirmed", recs[0]["event_id"])
	require.Contains(t, recs[0]["err"], "receipt handle expired")
}

// TestLoggerWithoutWarn: an adapter without Warn gets warn records at Info
// with severity=warn.
func TestLoggerWithoutWarn(t *testing.T) {
	sink := &logSink{}
	logger := watermill.NewSlogLogger(slog.New(slog.NewJSONHandler(sink, nil)))
	h := chain(t, sqliteStore(t), router.Config{Logger: logger}, func(context.Context, *sql.Tx, *message.Message) error {
		return context.Canceled
	})
	_, err := h(newMsg("e1", "{}"))
	require.Error(t, err)
	recs := sink.records(t, router.LogNackShutdown)
	require.Len(t, recs, 1)
	require.Equal(t, "INFO", recs[0]["level"])
	require.Equal(t, "warn", recs[0]["severity"])
}
