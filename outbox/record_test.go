package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
)

// countingStore counts how the relay records outcomes: set-based settle
// calls and the rows in them. (The store has no per-row recording call.)
type countingStore struct {
	stores.OutboxStore
	settles, settled atomic.Int64
}

func (c *countingStore) SettleOutboxIfClaimedOrHeld(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	c.settles.Add(1)
	c.settled.Add(int64(len(p.Rows)))
	return c.OutboxStore.SettleOutboxIfClaimedOrHeld(ctx, p)
}

// TestRecordSetBased: a relay records every outcome (done, retry, dead)
// through stores.OutboxStore.SettleOutboxIfClaimedOrHeld and never row by
// row, and every row ends as its effect said, on both stores.
func TestRecordSetBased(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, b *backend[*sqlTx]) { recordSetBased(t, b) }, func(t *testing.T, b *backend[pgx.Tx]) { recordSetBased(t, b) })
}

func recordSetBased[TTx any](t *testing.T, b *backend[TTx]) {
	const n = 120
	ids := insert(t, b.store, charges(n)...)
	// Row i: done, except every 10th fails for good and every 7th fails
	// once then succeeds.
	var failedOnce [n]atomic.Bool
	effect := func(_ context.Context, row stores.OutboxRow) error {
		var i int
		_, _ = fmt.Sscanf(row.IdempotencyKey, "charge:o%05d", &i)
		switch {
		case i%10 == 0:
			return ackgap.Permanent("test", errors.New("refused"))
		case i%7 == 0 && !failedOnce[i].Swap(true):
			return errors.New("try again")
		}
		return nil
	}
	cs := &countingStore{OutboxStore: outbox.PollOnly(b.store)}
	cfg := fast(map[string]outbox.Effect{"charge": effect}, nil)
	cfg.Concurrency = 50
	relay, err := outbox.New(cs, cfg)
	require.NoError(t, err)
	stop := running(t, relay)
	require.Eventually(t, func() bool { return backlog(t, b.store) == 0 }, 30*time.Second, 20*time.Millisecond)
	stop()
	rows := rowsByID(t, b.store)
	for i, id := range ids {
		want := stores.OutboxDone
		if i%10 == 0 {
			want = stores.OutboxDead
		}
		require.Equal(t, want, rows[id].State, "row %d", i)
	}
	require.GreaterOrEqual(t, cs.settled.Load(), int64(n+n/7-n/70), "every outcome, retries included")
	require.LessOrEqual(t, cs.settles.Load(), cs.settled.Load())
}

// TestRecordWaitsForClaim: the outcomes of one claim's effects, which
// finish at different times, are recorded in one statement when
// Config.RecordWait covers the spread: the recorder waits for the effects
// still in flight (and for no more once they all reported).
func TestRecordWaitsForClaim(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, b *backend[*sqlTx]) { recordWaitsForClaim(t, b) }, func(t *testing.T, b *backend[pgx.Tx]) { recordWaitsForClaim(t, b) })
}

func recordWaitsForClaim[TTx any](t *testing.T, b *backend[TTx]) {
	const n = 40
	insert(t, b.store, charges(n)...)
	// Every effect waits until all n were called, then returns after
	// 0..n-1 ms: outcomes spread over 40 ms, none before the last call.
	var called sync.WaitGroup
	called.Add(n)
	var i atomic.Int64
	effect := func(ctx context.Context, _ stores.OutboxRow) error {
		d := time.Duration(i.Add(1)-1) * time.Millisecond
		called.Done()
		called.Wait()
		time.Sleep(d)
		return nil
	}
	cs := &countingStore{OutboxStore: outbox.PollOnly(b.store)}
	cfg := fast(map[string]outbox.Effect{"charge": effect}, nil)
	cfg.Concurrency = n
	cfg.RecordWait = time.Minute
	relay, err := outbox.New(cs, cfg)
	require.NoError(t, err)
	started := time.Now()
	claimed, err := relay.RunOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, n, claimed)
	require.Less(t, time.Since(started), cfg.RecordWait/2, "the recorder stopped waiting once every effect reported")
	require.Equal(t, int64(1), cs.settles.Load(), "one statement for the claim")
	require.Equal(t, int64(n), cs.settled.Load())
	require.Zero(t, backlog(t, b.store))
}

// TestRecordGuardedByClaim: a row whose lease lapsed mid-effect and that
// another claimer took is not marked by the relay that called first (its
// set-based record reports OutcomeClaimLost); the other claimer's outcome
// stands.
func TestRecordGuardedByClaim(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, b *backend[*sqlTx]) { recordGuardedByClaim(t, b) }, func(t *testing.T, b *backend[pgx.Tx]) { recordGuardedByClaim(t, b) })
}

func recordGuardedByClaim[TTx any](t *testing.T, b *backend[TTx]) {
	ctx := context.Background()
	ids := insert(t, b.store, charge("charge:guard"))
	started, proceed := make(chan struct{}), make(chan struct{})
	effect := func(context.Context, stores.OutboxRow) error {
		close(started)
		<-proceed
		return nil
	}
	reps := newReports()
	relay, err := outbox.New(outbox.PollOnly(b.store), fast(map[string]outbox.Effect{"charge": effect}, reps))
	require.NoError(t, err)
	running(t, relay)
	<-started
	// Another relay, whose clock says the lease lapsed, claims the row.
	other, err := b.store.ClaimOutbox(ctx, &stores.OutboxClaimParams{Lease: time.Minute, Now: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Len(t, other.Rows, 1)
	close(proceed)
	rep := reps.next(t)
	require.Equal(t, outbox.OutcomeClaimLost, rep.Outcome, "the first relay's record found another claim")
	row := rowOf(t, b.store, ids[0])
	require.Equal(t, stores.OutboxClaimed, row.State, "nothing written by the first relay")
	require.Equal(t, 2, row.Attempts)
	res, err := b.store.SettleOutboxIfClaimedOrHeld(ctx, &stores.OutboxSettleParams{Rows: []stores.OutboxSettlement{
		{ID: ids[0], ClaimToken: other.Rows[0].Claim.Token, State: stores.OutboxDone}}})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, res.Changed, "the second claim still holds the row")
}

// blockingSettleStore holds the relay's first set-based recording until
// release is closed, and says when it entered it (settling).
type blockingSettleStore struct {
	stores.OutboxStore
	once              sync.Once
	settling, release chan struct{}
}

func (b *blockingSettleStore) SettleOutboxIfClaimedOrHeld(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	first := false
	b.once.Do(func() { first = true })
	if first {
		close(b.settling)
		<-b.release
	}
	return b.OutboxStore.SettleOutboxIfClaimedOrHeld(ctx, p)
}

// TestSlotFreeWhileRecording: an effect's slot (Config.Concurrency) is
// free once the effect returned, before its outcome is recorded. With one
// slot and the first recording held up, the relay still calls the second
// row's effect; every row is done once the recording goes through.
func TestSlotFreeWhileRecording(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, b *backend[*sqlTx]) { slotFreeWhileRecording(t, b) }, func(t *testing.T, b *backend[pgx.Tx]) { slotFreeWhileRecording(t, b) })
}

func slotFreeWhileRecording[TTx any](t *testing.T, b *backend[TTx]) {
	insert(t, b.store, charges(2)...)
	calls := make(chan string, 2)
	effect := func(_ context.Context, row stores.OutboxRow) error {
		calls <- row.IdempotencyKey
		return nil
	}
	bs := &blockingSettleStore{OutboxStore: outbox.PollOnly(b.store), settling: make(chan struct{}), release: make(chan struct{})}
	cfg := fast(map[string]outbox.Effect{"charge": effect}, nil)
	cfg.Concurrency = 1
	relay, err := outbox.New(bs, cfg)
	require.NoError(t, err)
	stop := running(t, relay)
	defer func() {
		select {
		case <-bs.release:
		default:
			close(bs.release) // let Run stop even when the test failed
		}
	}()

	require.Equal(t, "charge:o00000", <-calls)
	select {
	case <-bs.settling:
	case <-time.After(30 * time.Second):
		t.Fatal("the first outcome was never recorded")
	}
	select {
	case key := <-calls:
		require.Equal(t, "charge:o00001", key)
	case <-time.After(10 * time.Second):
		t.Fatal("the one slot stayed taken while the first outcome waited for its statement: the second row's effect was not called")
	}
	close(bs.release)
	require.Eventually(t, func() bool { return backlog(t, b.store) == 0 }, 30*time.Second, 20*time.Millisecond)
	stop()
	for _, r := range rowsByID(t, b.store) {
		require.Equal(t, stores.OutboxDone, r.State, r.IdempotencyKey)
		require.Equal(t, 1, r.Attempts, r.IdempotencyKey)
	}
}
