package outbox_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
)

// fast is a config for tests: short polls and backoffs.
func fast(effects map[string]outbox.Effect, reps *reports) *outbox.Config {
	c := &outbox.Config{
		Effects: effects, Lease: 10 * time.Second, PollInterval: 20 * time.Millisecond,
		RetryInitialInterval: 10 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond,
	}
	if reps != nil {
		c.Observer = reps.observe
	}
	return c
}

func TestConfig(t *testing.T) {
	s := sqliteBackend(t).store
	_, err := outbox.New(s, nil)
	require.ErrorContains(t, err, "invalid config: Config is nil")
	_, err = outbox.New(nil, &outbox.Config{})
	require.ErrorContains(t, err, "store is nil")

	_, err = outbox.New(s, &outbox.Config{
		Effects:     map[string]outbox.Effect{"": func(context.Context, stores.OutboxRow) error { return nil }, "x": nil},
		Concurrency: -1, Lease: time.Second, EffectTimeout: 2 * time.Second, PollInterval: -1, MaxAttempts: -1,
		RetryInitialInterval: time.Minute, RetryMaxInterval: time.Second, StopTimeout: -1, RecordTimeout: -1,
		DoneRetention: -1, PruneInterval: -1,
	})
	require.ErrorContains(t, err, "invalid config")
	for _, want := range []string{`Effects has the empty kind ""`, `Effects["x"] is nil`, "Concurrency is -1", "EffectTimeout is 2s, must be positive and shorter than Lease (1s)",
		"PollInterval is -1ns", "MaxAttempts is -1", "RetryInitialInterval 1m0s and RetryMaxInterval 1s", "StopTimeout is -1ns",
		"RecordTimeout is -1ns", "DoneRetention is -1ns", "PruneInterval is -1ns"} {
		require.ErrorContains(t, err, want)
	}
	_, err = outbox.New(s, &outbox.Config{})
	require.ErrorContains(t, err, "Effects is empty")

	c := outbox.Config{Lease: 4 * time.Second}.WithDefaults()
	require.Equal(t, 2*time.Second, c.EffectTimeout, "EffectTimeout defaults to half the lease")
	d := outbox.Config{}.WithDefaults()
	require.Equal(t, []any{outbox.ConcurrencyDefault, outbox.LeaseDefault, outbox.LeaseDefault / 2, outbox.PollIntervalDefault, outbox.MaxAttemptsDefault,
		outbox.RetryInitialIntervalDefault, outbox.RetryMaxIntervalDefault, outbox.StopTimeoutDefault, outbox.DoneRetentionDefault},
		[]any{d.Concurrency, d.Lease, d.EffectTimeout, d.PollInterval, d.MaxAttempts, d.RetryInitialInterval, d.RetryMaxInterval, d.StopTimeout, d.DoneRetention})
}

// TestRetries: a provider answering 503 and then 200 gets two calls with
// the same key and the row ends done; a 400 makes the row dead with the
// error kept; a redriven row is carried out and completes.
func TestRetries(t *testing.T) {
	bothStores(t,
		func(t *testing.T, b *backend[*sqlTx]) { retries(t, b) },
		func(t *testing.T, b *backend[pgx.Tx]) { retries(t, b) })
}

func retries[TTx any](t *testing.T, b *backend[TTx]) {
	p := newProvider(t)
	p.fail = func(key string, n int) (int, string) {
		switch {
		case key == "charge:flaky" && n == 1:
			return http.StatusServiceUnavailable, ""
		case key == "charge:bad" && n == 1:
			return http.StatusBadRequest, ""
		}
		return 0, ""
	}
	ids := insert(t, b.store, charge("charge:flaky"), charge("charge:bad"))
	flaky, bad := ids[0], ids[1]
	reps := newReports()
	relay, err := outbox.New(b.store, fast(map[string]outbox.Effect{"charge": p.effect()}, reps))
	require.NoError(t, err)
	stop := running(t, relay)
	require.Eventually(t, func() bool { return len(reps.outcomes(flaky)) == 2 && len(reps.outcomes(bad)) == 1 }, 20*time.Second, 5*time.Millisecond)

	require.Equal(t, []outbox.Outcome{outbox.OutcomeRetry, outbox.OutcomeDone}, reps.outcomes(flaky))
	calls := p.callsOf("charge:flaky")
	require.Len(t, calls, 2, "503, then 200")
	require.Equal(t, []int{http.StatusServiceUnavailable, http.StatusCreated}, []int{calls[0].Status, calls[1].Status})
	require.Equal(t, calls[0].Body, calls[1].Body, "the same request, with the same Idempotency-Key")
	r := rowOf(t, b.store, flaky)
	require.Equal(t, []any{stores.OutboxDone, 2}, []any{r.State, r.Attempts})
	require.Contains(t, r.LastError, "HTTP 503", "the last failure stays on record")
	retry := reps.of(flaky)[0]
	require.Positive(t, retry.Delay)
	require.LessOrEqual(t, retry.Delay, 50*time.Millisecond, "the backoff is capped by RetryMaxInterval")

	require.Equal(t, []outbox.Outcome{outbox.OutcomeDead}, reps.outcomes(bad), "a 4xx is not retried")
	dead, err := relay.List(context.Background(), stores.OutboxDead, 0)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, bad, dead[0].ID)
	require.Contains(t, dead[0].LastError, "permanent failure (http_400): HTTP 400 Bad Request")
	require.Contains(t, dead[0].LastError, "injected 400", "the start of the response body is kept")
	st, err := relay.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, []int64{0, 0, 1}, []int64{st.Pending, st.Claimed, st.Dead})

	// Redrive: pending again with attempts reset, and carried out.
	n, err := relay.Redrive(context.Background(), bad)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Eventually(t, func() bool { return rowOf(t, b.store, bad).State == stores.OutboxDone }, 20*time.Second, 5*time.Millisecond)
	stop()
	require.Equal(t, []outbox.Outcome{outbox.OutcomeDead, outbox.OutcomeDone}, reps.outcomes(bad))
	require.Equal(t, 1, rowOf(t, b.store, bad).Attempts, "attempts restart after a redrive")
	require.Len(t, p.callsOf("charge:bad"), 2)
	calls2, charged := p.counts()
	require.Equal(t, []int{4, 2}, []int{calls2, charged})
}

// TestAttempts: a failing effect is tried MaxAttempts times, then the row
// is dead with ErrAttemptsExhausted; a panic is retried like an error; a
// row claimed more than MaxAttempts times without an outcome (a crashing
// relay) is dead without its effect being called again.
func TestAttempts(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	ctx := context.Background()
	var mu sync.Mutex
	calls := map[string]int{}
	effect := func(_ context.Context, row stores.OutboxRow) error {
		mu.Lock()
		calls[row.IdempotencyKey]++
		mu.Unlock()
		if row.IdempotencyKey == "panics" {
			panic("boom")
		}
		return errors.New("provider down")
	}
	ids := insert(t, b.store, ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "fails"}, ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "panics"})
	reps := newReports()
	cfg := fast(map[string]outbox.Effect{"k": effect}, reps)
	cfg.MaxAttempts = 3
	relay, err := outbox.New(b.store, cfg)
	require.NoError(t, err)
	stop := running(t, relay)
	require.Eventually(t, func() bool { return backlog(t, b.store) == 0 }, 20*time.Second, 5*time.Millisecond)
	stop()
	for _, id := range ids {
		require.Equal(t, []outbox.Outcome{outbox.OutcomeRetry, outbox.OutcomeRetry, outbox.OutcomeDead}, reps.outcomes(id))
	}
	require.Equal(t, map[string]int{"fails": 3, "panics": 3}, calls)
	last := reps.of(ids[0])[2]
	require.ErrorIs(t, last.Err, outbox.ErrAttemptsExhausted)
	require.Contains(t, rowOf(t, b.store, ids[0]).LastError, "attempts exhausted (3 of 3): provider down")
	require.Contains(t, rowOf(t, b.store, ids[1]).LastError, `panicked: boom`)

	// A row whose earlier claims all ended without an outcome.
	poison := insert(t, b.store, ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "poison"})[0]
	for range 3 {
		res, err := b.store.ClaimOutbox(ctx, &stores.OutboxClaimParams{Lease: time.Microsecond, Kinds: []string{"k"}})
		require.NoError(t, err)
		require.Len(t, res.Rows, 1) // and then "crash": the lease lapses at once
		time.Sleep(time.Millisecond)
	}
	n, err := relay.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []outbox.Outcome{outbox.OutcomeDead}, reps.outcomes(poison))
	require.Zero(t, calls["poison"], "the effect that may crash the relay is not called again")
	require.ErrorIs(t, reps.of(poison)[0].Err, outbox.ErrAttemptsExhausted)
	require.Contains(t, rowOf(t, b.store, poison).LastError, "claimed 4 times, the limit is 3")
}

// TestOrderNone documents the order the relay keeps: none between rows.
// Claims take the oldest due rows first, so with one slot and nothing
// failing, effects run in commit order; a row that keeps failing does not
// hold back the rows after it.
func TestOrderNone(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	var mu sync.Mutex
	var order []string
	effect := func(_ context.Context, row stores.OutboxRow) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, row.IdempotencyKey)
		if row.IdempotencyKey == "k1" {
			return errors.New("k1 keeps failing")
		}
		return nil
	}
	for _, k := range []string{"k0", "k1", "k2", "k3"} {
		insert(t, b.store, ackgap.OutboxEntry{Kind: "k", IdempotencyKey: k})
	}
	cfg := fast(map[string]outbox.Effect{"k": effect}, nil)
	cfg.Concurrency = 1
	cfg.RetryInitialInterval, cfg.RetryMaxInterval = time.Hour, time.Hour
	relay, err := outbox.New(b.store, cfg)
	require.NoError(t, err)
	for range 4 {
		n, err := relay.RunOnce(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	require.Equal(t, []string{"k0", "k1", "k2", "k3"}, order, "oldest due first")
	st, err := relay.Stats(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Pending, "k1 waits for its retry; k2 and k3 went ahead of it")
	n, err := relay.RunOnce(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestGracefulStop: when Run's context ends, an effect in flight finishes
// and its outcome is recorded; one that outlives StopTimeout is cancelled,
// its row left claimed for its lease to lapse. Either way Run returns only
// after the effect did (goleak checks the rest).
func TestGracefulStop(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	release := make(chan struct{})
	started := make(chan string, 2)
	effect := func(ctx context.Context, row stores.OutboxRow) error {
		started <- row.IdempotencyKey
		if row.IdempotencyKey == "stubborn" {
			<-ctx.Done()
			return ctx.Err()
		}
		<-release
		return nil
	}
	reps := newReports()
	cfg := fast(map[string]outbox.Effect{"k": effect}, reps)
	cfg.StopTimeout = time.Hour
	relay, err := outbox.New(b.store, cfg)
	require.NoError(t, err)
	id := insert(t, b.store, ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "finishes"})[0]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	require.Equal(t, "finishes", <-started)
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while an effect was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-done)
	require.Equal(t, []outbox.Outcome{outbox.OutcomeDone}, reps.outcomes(id), "recorded after the stop")
	require.Equal(t, stores.OutboxDone, rowOf(t, b.store, id).State)

	cfg.StopTimeout = 50 * time.Millisecond
	relay, err = outbox.New(b.store, cfg)
	require.NoError(t, err)
	id = insert(t, b.store, ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "stubborn"})[0]
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- relay.Run(ctx) }()
	require.Equal(t, "stubborn", <-started)
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, []outbox.Outcome{outbox.OutcomeUnrecorded}, reps.outcomes(id))
	r := rowOf(t, b.store, id)
	require.Equal(t, stores.OutboxClaimed, r.State, "left for its lease to lapse")
}

func TestRunTwiceIsRefused(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	called := make(chan struct{}, 1)
	relay, err := outbox.New(b.store, fast(map[string]outbox.Effect{"k": func(context.Context, stores.OutboxRow) error {
		called <- struct{}{}
		return nil
	}}, nil))
	require.NoError(t, err)
	insert(t, b.store, ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "k1"})
	stop := running(t, relay)
	<-called // Run is running
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, relay.Run(ctx), outbox.ErrAlreadyRunning)
	stop()
	require.NoError(t, relay.Run(ctx), "stopped, it runs again")
}

// TestKindsAndPrune: a relay claims only the kinds it has effects for;
// PruneDone deletes done rows past DoneRetention and nothing else.
func TestKindsAndPrune(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	ctx := context.Background()
	ids := insert(t, b.store, ackgap.OutboxEntry{Kind: "mine", IdempotencyKey: "m1"}, ackgap.OutboxEntry{Kind: "theirs", IdempotencyKey: "t1"})
	now := time.Now()
	cfg := fast(map[string]outbox.Effect{"mine": func(context.Context, stores.OutboxRow) error { return nil }}, nil)
	cfg.DoneRetention = time.Hour
	cfg.Now = func() time.Time { return now }
	relay, err := outbox.New(b.store, cfg)
	require.NoError(t, err)
	n, err := relay.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, stores.OutboxPending, rowOf(t, b.store, ids[1]).State, "no effect for kind theirs")

	pruned, err := relay.PruneDone(ctx)
	require.NoError(t, err)
	require.Zero(t, pruned, "done just now, kept for DoneRetention")
	now = now.Add(2 * time.Hour)
	pruned, err = relay.PruneDone(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, pruned)
	left := rowsByID(t, b.store)
	require.Len(t, left, 1)
	require.Contains(t, left, ids[1])
}

// TestPermanentFromEffect: an effect's ackgap.Permanent error makes the row
// dead at once, with the reason in its last error.
func TestPermanentFromEffect(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	id := insert(t, b.store, ackgap.OutboxEntry{Kind: "k", IdempotencyKey: "k1"})[0]
	relay, err := outbox.New(b.store, fast(map[string]outbox.Effect{"k": func(context.Context, stores.OutboxRow) error {
		return ackgap.Permanent("card_declined", errors.New("insufficient funds"))
	}}, nil))
	require.NoError(t, err)
	_, err = relay.RunOnce(context.Background())
	require.NoError(t, err)
	r := rowOf(t, b.store, id)
	require.Equal(t, []any{stores.OutboxDead, 1, "permanent failure (card_declined): insufficient funds"}, []any{r.State, r.Attempts, r.LastError})
}
