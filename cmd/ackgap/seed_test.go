package main

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

type (
	pgxTx = pgx.Tx
	sqlTx = *sql.Tx
)

// genericSeeder writes rows through any store, as a handler would: the
// inbox row and its outbox rows in one transaction.
type genericSeeder[TTx any] struct {
	stores.Operator
	s stores.Store[TTx]
}

func (g *genericSeeder[TTx]) inbox(t *testing.T, consumer, eventID string, at time.Time, rows ...ackgap.OutboxEntry) {
	t.Helper()
	ctx := context.Background()
	res, err := g.s.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: consumer, EventID: eventID,
		PayloadHash: stores.PayloadHash([]byte(eventID)), Now: at, TraceParent: traceParent})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	for i := range rows {
		rows[i].Consumer, rows[i].EventID = consumer, eventID
		err := g.s.QueueOutboxTx(ctx, res.Tx, &rows[i])
		require.NoError(t, err)
	}
	require.NoError(t, g.s.CommitTx(ctx, res.Tx))
}

func (g *genericSeeder[TTx]) progress(t *testing.T, consumer, eventID string, p stores.Progress) {
	t.Helper()
	ctx := context.Background()
	res, err := g.s.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: consumer, EventID: eventID, Progress: &p})
	require.NoError(t, err)
	require.False(t, res.Duplicate)
	require.NoError(t, g.s.CommitTx(ctx, res.Tx))
}
