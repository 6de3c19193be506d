package outbox_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

// failDoneOnce is a store whose "mark done" of one row fails once, after
// the effect went through: the connection broke, the database restarted.
// The statement that records it fails whole, with every row in it.
type failDoneOnce struct {
	stores.OutboxStore
	id     int64
	failed atomic.Bool
}

var errInjected = errors.New("injected: connection reset while marking the row done")

func (f *failDoneOnce) SettleOutboxIfClaimedOrHeld(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	for _, r := range p.Rows {
		if r.ID == f.id && r.State == stores.OutboxDone && f.failed.CompareAndSwap(false, true) {
			return nil, errInjected
		}
	}
	return f.OutboxStore.SettleOutboxIfClaimedOrHeld(ctx, p)
}

// TestS16MarkDoneFailsOnce is case S16 (b): rows O1..O3 with keys K1..K3
// are published to a broker whose consumer runs behind ackgap's inbox.
// After the broker confirmed O2, recording "done" fails once. O2 is
// published again one lease later (not in a tight loop) with the same
// event id K2, the consumer skips the copy as a duplicate, and O2 ends
// done.
func TestS16MarkDoneFailsOnce(t *testing.T) {
	bothStores(t,
		func(t *testing.T, b *backend[*sqlTx]) { s16(t, b) },
		func(t *testing.T, b *backend[pgx.Tx]) { s16(t, b) })
}

func s16[TTx any](t *testing.T, b *backend[TTx]) {
	const lease = time.Second
	// Publish returns once the consumer acked: the broker's confirmation.
	pubsub := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, nil)
	var mu sync.Mutex
	outcomes := map[ackgap.Outcome]int{}
	deliveries := map[string]int{}
	consumer, err := router.New(b.store, &router.Config{
		DeadLetter: pubsub, CloseTimeout: 5 * time.Second,
		InboxConfig: middleware.InboxConfig{Observer: func(_ context.Context, r *ackgap.InboxReport) {
			mu.Lock()
			defer mu.Unlock()
			outcomes[r.Outcome]++
			deliveries[r.EventID]++
		}},
	})
	require.NoError(t, err)
	require.NoError(t, consumer.AddHandler("downstream", "orders.events", pubsub,
		func(context.Context, TTx, *message.Message) error { return nil }))
	runErr := make(chan error, 1)
	go func() { runErr <- consumer.Run(context.Background()) }()
	<-consumer.Running()

	ids := insert(t, b.store,
		ackgap.OutboxEntry{Kind: "order.event", IdempotencyKey: "K1", Payload: []byte(`{"order":"O1"}`)},
		ackgap.OutboxEntry{Kind: "order.event", IdempotencyKey: "K2", Payload: []byte(`{"order":"O2"}`)},
		ackgap.OutboxEntry{Kind: "order.event", IdempotencyKey: "K3", Payload: []byte(`{"order":"O3"}`)})
	o2 := ids[1]
	reps := newReports()
	publish := outbox.Publish(pubsub, "orders.events")
	// O2's first copy is recorded after O1's and O3's, so that the failed
	// record statement holds O2 alone (the relay records the outcomes
	// that finish together in one statement).
	effect := func(ctx context.Context, row stores.OutboxRow) error {
		err := publish(ctx, row)
		for row.ID == o2 && row.Attempts == 1 && (len(reps.outcomes(ids[0])) == 0 || len(reps.outcomes(ids[2])) == 0) {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Millisecond):
			}
		}
		return err
	}
	relay, err := outbox.New(&failDoneOnce{OutboxStore: b.store, id: o2}, &outbox.Config{
		Effects: map[string]outbox.Effect{"order.event": effect},
		Lease:   lease, PollInterval: 10 * time.Millisecond, Observer: reps.observe,
	})
	require.NoError(t, err)
	stop := running(t, relay)
	// Wait for the end state, not for a count: on a busy machine O2's
	// first copy can outlast the wait above and be recorded in the same
	// failed statement as O1 or O3, which are then published again too.
	lastDone := func(id int64) bool {
		out := reps.outcomes(id)
		return len(out) > 0 && out[len(out)-1] == outbox.OutcomeDone
	}
	require.Eventually(t, func() bool {
		return len(reps.outcomes(o2)) >= 2 && lastDone(ids[0]) && lastDone(ids[1]) && lastDone(ids[2])
	}, 30*time.Second, 5*time.Millisecond)
	time.Sleep(5 * 10 * time.Millisecond) // a few more polls: nothing more may be published
	stop()
	require.NoError(t, consumer.Close())
	require.NoError(t, <-runErr)

	// Invariants, not counts that timing decides: on a busy machine a
	// publish can outlast its deadline or its lease, and the row is then
	// published again (same event id) before it is recorded done.
	for _, id := range []int64{ids[0], ids[2]} {
		out := reps.outcomes(id)
		require.Equal(t, outbox.OutcomeDone, out[len(out)-1], "%v", out)
		require.Equal(t, 1, countOf(out, outbox.OutcomeDone), "done once: %v", out)
	}
	r2 := reps.of(o2)
	failed := slices.IndexFunc(r2, func(r outbox.Report) bool { return errors.Is(r.RecordErr, errInjected) })
	require.GreaterOrEqual(t, failed, 0, "the injected record failure was met: %+v", r2)
	require.Equal(t, outbox.OutcomeUnrecorded, r2[failed].Outcome)
	require.NoError(t, r2[failed].Err, "the broker confirmed O2")
	require.Less(t, failed, len(r2)-1, "O2 was published again after the failed record")
	require.Equal(t, outbox.OutcomeDone, r2[len(r2)-1].Outcome)
	require.Equal(t, 1, countOf(reps.outcomes(o2), outbox.OutcomeDone))
	// The next attempt starts after the failed claim's lease ended (the
	// lease is the backoff, no tight loop). Measured against the claim's
	// own end, not the first Started: that is taken after the claim
	// statement returned, and on SQLite the claim may wait for the write
	// lock after the lease began (a gap between Started times under the
	// lease, seen under -race on a busy machine).
	next := r2[failed+1]
	require.False(t, next.Started.Before(r2[failed].Row.Claim.Until),
		"republished once the lease lapsed: the next attempt started %s, the failed attempt's lease ended %s", next.Started, r2[failed].Row.Claim.Until)

	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, deliveries["K2"], 2, "O2 republished with the same event id K2: %v", deliveries)
	total := 0
	for k, n := range deliveries {
		require.Contains(t, []string{"K1", "K2", "K3"}, k)
		require.GreaterOrEqual(t, n, 1)
		total += n
	}
	require.Equal(t, 3, outcomes[ackgap.OutcomeApplied], "each event applied once downstream")
	require.Equal(t, total-3, outcomes[ackgap.OutcomeDuplicate], "every other delivery skipped as a duplicate")
	published, republished := 0, 0
	for _, r := range reps.list {
		if r.Outcome == outbox.OutcomeDone {
			published++
			if r.Row.Attempts > 1 {
				republished++
			}
		}
	}
	require.Equal(t, 3, published, "outbox_published=3")
	require.GreaterOrEqual(t, republished, 1, "outbox_republished counts O2")
	row := rowOf(t, b.store, o2)
	require.Equal(t, stores.OutboxDone, row.State, "O2 ends done")
	require.GreaterOrEqual(t, row.Attempts, 2)
}

// countOf is how many of out are o.
func countOf(out []outbox.Outcome, o outbox.Outcome) int {
	n := 0
	for _, x := range out {
		if x == o {
			n++
		}
	}
	return n
}
