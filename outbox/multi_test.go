package outbox_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
)

// TestS16TwoRelays (case S16 (a), two relays polling one outbox): two
// relays on one database carry out 2,000 rows; with
// leases long enough, each row's effect is called exactly once (counted
// by the provider). It logs the throughput and how the rows split.
// SQLite gets 500 rows: the race detector slows modernc.org/sqlite (C
// translated to Go) about twentyfold.
func TestS16TwoRelays(t *testing.T) {
	bothStores(t,
		func(t *testing.T, b *backend[*sqlTx]) { twoRelays(t, b, 500) },
		func(t *testing.T, b *backend[pgx.Tx]) { twoRelays(t, b, 2000) })
}

func twoRelays[TTx any](t *testing.T, b *backend[TTx], n int) {
	p := newProvider(t)
	insert(t, b.store, charges(n)...)
	var done [2]atomic.Int64
	relays := make([]*outbox.Relay, 2)
	for i := range relays {
		var err error
		relays[i], err = outbox.New(b.store, &outbox.Config{
			Effects: map[string]outbox.Effect{"charge": p.effect()}, Concurrency: 8, Lease: 30 * time.Second,
			Observer: func(_ context.Context, r *outbox.Report) {
				if r.Outcome == outbox.OutcomeDone {
					done[i].Add(1)
				}
			},
		})
		require.NoError(t, err)
	}
	start := time.Now()
	stopA, stopB := running(t, relays[0]), running(t, relays[1])
	require.Eventually(t, func() bool { return done[0].Load()+done[1].Load() == int64(n) }, 60*time.Second, 2*time.Millisecond)
	elapsed := time.Since(start)
	stopA()
	stopB()

	calls, charged := p.counts()
	require.Equal(t, n, calls, "one call per row")
	require.Equal(t, n, charged)
	for key, c := range p.callsPerKey() {
		require.Equal(t, 1, c, "key %s called %d times", key, c)
	}
	require.Zero(t, backlog(t, b.store))
	for _, r := range rowsByID(t, b.store) {
		require.Equal(t, []any{stores.OutboxDone, 1}, []any{r.State, r.Attempts})
	}
	// How the rows split between A and B is for the scheduler to decide
	// (on a busy machine one relay may claim them all): it is logged, not
	// asserted. The invariants above hold for any split.
	t.Logf("%s: %d rows by two relays (concurrency 8 each, HTTP on loopback) in %s: %.0f rows/s (A %d, B %d)",
		b.name, n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), done[0].Load(), done[1].Load())
}

// TestSlowProviderHoldsNoConnection: while a slow provider keeps both
// effects waiting, a consumer on a pool of only two connections keeps
// committing inbox transactions: the relay holds no connection, and no
// transaction, during an effect (docs/design.md invariant 7).
func TestSlowProviderHoldsNoConnection(t *testing.T) {
	t.Parallel()
	b := pgBackend(t, 2)
	p := newProvider(t)
	p.hold = make(chan struct{})
	p.holdMax = 2 * time.Second // a slow provider: 2 s per call, unless released
	insert(t, b.store, charge("charge:slow1"), charge("charge:slow2"))
	relay, err := outbox.New(b.store, &outbox.Config{
		Effects: map[string]outbox.Effect{"charge": p.effect()}, Concurrency: 2, Lease: 30 * time.Second,
	})
	require.NoError(t, err)
	stop := running(t, relay)
	for range 2 {
		select {
		case <-p.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the relay did not call the provider")
		}
	}
	require.EqualValues(t, 2, p.inflight.Load())

	// The consumer: 20 inbox transactions, each with a state change's
	// worth of work (an outbox row), committed while both calls wait.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	for i := range 20 {
		res, err := b.store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "consumer", EventID: fmt.Sprintf("during-%d", i)})
		require.NoError(t, err, "a connection was free for the consumer")
		err = b.store.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "later", IdempotencyKey: fmt.Sprintf("later:%d", i)})
		require.NoError(t, err)
		require.NoError(t, b.store.CommitTx(ctx, res.Tx))
	}
	require.EqualValues(t, 2, p.inflight.Load(), "all 20 commits happened while the provider held both calls")
	close(p.hold)
	require.Eventually(t, func() bool {
		st, err := b.store.OutboxStats(context.Background(), &stores.OutboxStatsParams{Kind: "charge"})
		return err == nil && st.Backlog() == 0
	}, 10*time.Second, 5*time.Millisecond)
	stop()
	_, charged := p.counts()
	require.Equal(t, 2, charged)
}
