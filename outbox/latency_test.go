package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
)

// TestCommitToEffectLatency measures, and only reports (t.Log, see -v),
// the time from a handler's COMMIT to the start of its effect, with the
// relay idle: on PostgreSQL woken by LISTEN/NOTIFY, and polling only (the
// store wrapped with outbox.PollOnly); on SQLite, which is polled. Polling
// adds about half the poll interval on average; the interval here is
// latencyPoll, the default is outbox.PollIntervalDefault (1 s).
func TestCommitToEffectLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	t.Run("postgres-notify", func(t *testing.T) {
		b := pgBackend(t, 8)
		reportLatency(t, "postgres, LISTEN/NOTIFY", measureLatency(t, b, b.store))
	})
	t.Run("postgres-poll", func(t *testing.T) {
		b := pgBackend(t, 8)
		reportLatency(t, "postgres, polling", measureLatency(t, b, outbox.PollOnly(b.store)))
	})
	t.Run("sqlite-poll", func(t *testing.T) {
		b := sqliteBackend(t)
		reportLatency(t, "sqlite, polling", measureLatency(t, b, b.store))
	})
}

const (
	latencySamples = 40
	latencyPoll    = 100 * time.Millisecond
)

// measureLatency commits latencySamples transactions with one outbox row
// each, one at a time, and returns for each the time from the COMMIT
// call to the effect's start.
func measureLatency[TTx any](t *testing.T, b *backend[TTx], relayStore stores.OutboxStore) []time.Duration {
	ctx := context.Background()
	called := make(chan time.Time, 1)
	relay, err := outbox.New(relayStore, &outbox.Config{
		PollInterval: latencyPoll,
		Effects: map[string]outbox.Effect{"ping": func(context.Context, stores.OutboxRow) error {
			called <- time.Now()
			return nil
		}},
	})
	require.NoError(t, err)
	stop := running(t, relay)
	defer stop()
	time.Sleep(50 * time.Millisecond) // let the listener start
	var out []time.Duration
	for i := range latencySamples {
		res, err := b.store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "latency", EventID: fmt.Sprint(i)})
		require.NoError(t, err)
		err = b.store.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "ping", IdempotencyKey: fmt.Sprint("ping:", i)})
		require.NoError(t, err)
		commit := time.Now()
		require.NoError(t, b.store.CommitTx(ctx, res.Tx))
		select {
		case at := <-called:
			out = append(out, at.Sub(commit))
		case <-time.After(10 * time.Second):
			t.Fatal("the effect was not called")
		}
		// Spread the commits over the poll cycle.
		time.Sleep(time.Duration(i%7) * latencyPoll / 7)
	}
	return out
}

func reportLatency(t *testing.T, what string, ds []time.Duration) {
	t.Logf("commit-to-effect latency, %s (poll interval %s, %d samples): p50 %s, p99 %s, max %s",
		what, latencyPoll, len(ds), percentile(ds, 0.5).Round(10*time.Microsecond),
		percentile(ds, 0.99).Round(10*time.Microsecond), percentile(ds, 1).Round(10*time.Microsecond))
}
