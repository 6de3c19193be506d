package router_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// TestLogsEscapeEventID (issue 22, item 5): an event id that is not UTF-8
// is logged in event_id (and a UUID in message_uuid) as the error text
// quotes it, with Go escapes, never as raw bytes (a JSON log turns those
// into U+FFFD and loses them); an accepted id with a control character is
// quoted too, so no log line can be forged through it. Ordinary ids are
// logged as they are (TestLogsDeadLetterAndRetries).
func TestLogsEscapeEventID(t *testing.T) {
	sink, logger := newSink()
	h := chain(t, sqliteStore(t), router.Config{Logger: logger, MaxAttempts: 2}, func(context.Context, *sql.Tx, *message.Message) error {
		return errors.New("payment gateway: 503")
	})
	const invalid, forged = "evt-\xff\xfe", "evt\nlevel=INFO msg=forged"
	msg := newMsg(invalid, `{}`)
	msg.UUID = "uuid-\xff"
	_, err := h(msg)
	require.NoError(t, err, "dead-lettered and acked")
	_, err = h(newMsg(forged, `{}`))
	require.NoError(t, err, "out of attempts: dead-lettered and acked")

	dead := sink.records(t, router.LogDeadLettered)
	require.Len(t, dead, 2)
	require.Equal(t, fmt.Sprintf("%+q", invalid), dead[0]["event_id"])
	require.Equal(t, `"uuid-\xff"`, dead[0]["message_uuid"])
	require.Contains(t, dead[0]["error"], fmt.Sprintf("%+q", invalid), "the error text quotes it the same way")
	require.Equal(t, fmt.Sprintf("%+q", forged), dead[1]["event_id"])
	retried := sink.records(t, router.LogRetrying)
	require.Len(t, retried, 1)
	require.Equal(t, fmt.Sprintf("%+q", forged), retried[0]["event_id"])
	require.NotContains(t, sink.text(), "\ufffd", "no byte was lost to a replacement character")
}

// TestSchemaCheckFailureIsNotSchemaBehind (issue 22, item 5): when Run
// cannot read the migration status because the database refuses the
// connection, it logs LogSchemaCheckFailed at warn with the connection
// error, never LogSchemaBehind, which would send the operator to run
// migrations that are all applied.
func TestSchemaCheckFailureIsNotSchemaBehind(t *testing.T) {
	// Nothing listens on port 1: every connection is refused.
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	sink := &logSink{}
	logger := router.SlogLogger(slog.New(slog.NewJSONHandler(sink, nil)))
	ps := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	r, err := router.New[pgx.Tx](store, &router.Config{DeadLetter: ps, Logger: logger})
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("billing", "orders", ps, func(context.Context, pgx.Tx, *message.Message) error { return nil }))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-r.Running()
	require.NoError(t, r.Close())
	require.NoError(t, <-done)

	require.Empty(t, sink.records(t, router.LogSchemaBehind), "the schema was never seen")
	failed := sink.records(t, router.LogSchemaCheckFailed)
	require.Len(t, failed, 1)
	require.Equal(t, "WARN", failed[0]["level"])
	require.Equal(t, "store unavailable", failed[0]["cause"])
	require.Contains(t, failed[0]["err"], "connect")
}
