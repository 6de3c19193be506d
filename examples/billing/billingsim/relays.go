package billingsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/telemetry"
)

// Settings of the demo's relays.
const (
	// RelayConcurrency is how many effects each relay runs at once.
	RelayConcurrency = 8
	// RelayPollInterval is how often an idle relay looks for due rows; on
	// PostgreSQL a NOTIFY wakes it sooner.
	RelayPollInterval = 50 * time.Millisecond
	// RelayLease is how long a claim holds a row.
	RelayLease = 30 * time.Second
	// RelayRetryInitial and RelayRetryMax shape the relays' backoff: short,
	// so that a lost reply is retried within the demo's run.
	RelayRetryInitial = 20 * time.Millisecond
	RelayRetryMax     = time.Second
)

// errReplyLost is what the charge effect returns, after the provider
// charged, for the orders selected by -lost-replies.
var errReplyLost = errors.New("simulated: the provider's reply was lost (a timeout after it charged)")

// lostReplies drops the reply to the first charge call of selected orders:
// the provider charged, but the relay does not know it and retries. The
// retry carries the same idempotency key, so the provider answers with the
// original charge instead of charging again.
type lostReplies struct {
	keys map[string]bool
	lost atomic.Int64
	done sync.Map // keys whose reply was lost already: once per key
}

func (l *lostReplies) wrap(charge outbox.Effect) outbox.Effect {
	return func(ctx context.Context, row stores.OutboxRow) error {
		if err := charge(ctx, row); err != nil {
			return err
		}
		if l.keys[row.IdempotencyKey] {
			if _, again := l.done.LoadOrStore(row.IdempotencyKey, true); !again {
				l.lost.Add(1)
				return errReplyLost
			}
		}
		return nil
	}
}

// relayTally counts the relays' reports (outbox.Config.Observer).
type relayTally struct {
	mu sync.Mutex
	// outcomes counts reports by outcome; republished counts rows done at
	// an attempt after the first.
	outcomes    map[outbox.Outcome]int
	republished int
	// deadErrs keeps the first dead rows' errors, for the failure message.
	deadErrs []string
}

func (t *relayTally) observe(_ context.Context, r *outbox.Report) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.outcomes[r.Outcome]++
	switch r.Outcome {
	case outbox.OutcomeDone:
		if r.Row.Attempts > 1 {
			t.republished++
		}
	case outbox.OutcomeDead:
		if len(t.deadErrs) < 3 {
			t.deadErrs = append(t.deadErrs, fmt.Sprintf("%s: %v", r.Row.IdempotencyKey, r.Err))
		}
	}
}

// finished returns the rows that reached a final state (done or dead).
func (t *relayTally) finished() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.outcomes[outbox.OutcomeDone] + t.outcomes[outbox.OutcomeDead]
}

// relays are the demo's relay instances, all on one store: like one relay
// per service instance.
type relays struct {
	list   []*outbox.Relay
	tally  *relayTally
	woken  bool
	cancel context.CancelFunc
	errs   chan error
	once   sync.Once
	err    error
}

// startRelays starts n relays on store whose effects call svc: "charge"
// rows POST to the payment provider, "email.receipt" rows to the mailer,
// both with the row's idempotency key, each call a client span of tel
// linked to the consumer span that wrote the row. They run until stop.
func startRelays(ctx context.Context, store stores.OutboxStore, n int, svc *services, lost *lostReplies, tel *telemetry.Telemetry) (*relays, error) {
	_, woken := store.(*pgxstore.Store) // LISTEN/NOTIFY; the other stores poll
	rs := &relays{tally: &relayTally{outcomes: map[outbox.Outcome]int{}}, woken: woken, errs: make(chan error, n)}
	effects := map[string]outbox.Effect{
		orders.KindCharge:  tel.OutboxEffect("POST charges", trace.SpanKindClient, lost.wrap(outbox.HTTP(svc.client, svc.chargesURL))),
		orders.KindReceipt: tel.OutboxEffect("POST receipts", trace.SpanKindClient, outbox.HTTP(svc.client, svc.receiptsURL)),
	}
	for range n {
		r, err := outbox.New(store, &outbox.Config{
			Effects: effects, Concurrency: RelayConcurrency, Lease: RelayLease, PollInterval: RelayPollInterval,
			RetryInitialInterval: RelayRetryInitial, RetryMaxInterval: RelayRetryMax, Observer: rs.tally.observe,
		})
		if err != nil {
			return nil, err
		}
		rs.list = append(rs.list, r)
	}
	runCtx, cancel := context.WithCancel(ctx)
	rs.cancel = cancel
	for _, r := range rs.list {
		go func() { rs.errs <- r.Run(runCtx) }()
	}
	return rs, nil
}

// waitDrained waits until want rows reached a final state, then checks
// the store's backlog is empty. It gives up when timeout fires or ctx
// ends.
func (rs *relays) waitDrained(ctx context.Context, store stores.OutboxStore, want int, timeout <-chan time.Time) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for rs.tally.finished() < want {
		select {
		case <-tick.C:
		case <-timeout:
			rs.tally.mu.Lock()
			defer rs.tally.mu.Unlock()
			return fmt.Errorf("timed out waiting for the outbox to drain: relay outcomes %v", rs.tally.outcomes)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	st, err := store.OutboxStats(ctx, &stores.OutboxStatsParams{})
	if err != nil {
		return fmt.Errorf("outbox stats: %w", err)
	}
	if st.Backlog() != 0 {
		return fmt.Errorf("the relays finished %d rows, but the outbox still holds %d pending and %d claimed", want, st.Pending, st.Claimed)
	}
	return nil
}

// stop stops the relays and waits for them; it is safe to call twice.
func (rs *relays) stop() error {
	rs.once.Do(func() {
		rs.cancel()
		var errs []error
		for range rs.list {
			errs = append(errs, <-rs.errs)
		}
		rs.err = errors.Join(errs...)
	})
	return rs.err
}

// Settings of the relay that the demo kills (Options.RelayCrash).
const (
	// CrashRelayLease is the killed relay's lease: its rows become due
	// again this long after it claimed them.
	CrashRelayLease = time.Second
	// crashRelayWait bounds the wait for the doomed relay to claim rows.
	crashRelayWait = 10 * time.Second
)

// crashRelay runs a relay that dies mid-effect, the way a relay process
// killed with SIGKILL does: it claims up to n rows (with a short lease),
// calls the provider for its charges — which charges — and then hangs
// instead of recording anything. Once n effects hang (or no more rows
// come) it is stopped with no time to finish: its effects are cut short,
// no outcome is recorded, and its rows stay claimed until the lease
// lapses. The relays started after it must carry them out again with the
// same idempotency keys. It returns how many rows it left claimed, and
// how many of those were charges.
func crashRelay(ctx context.Context, store stores.OutboxStore, n int, svc *services) (cut, charges int, err error) {
	var hung atomic.Int64
	hang := func(call outbox.Effect) outbox.Effect {
		return func(ectx context.Context, row stores.OutboxRow) error {
			if err := call(ectx, row); err != nil {
				return err
			}
			hung.Add(1)
			<-ectx.Done() // the process dies here: the outcome is never recorded
			return ectx.Err()
		}
	}
	var cutRows, cutCharges atomic.Int64
	r, err := outbox.New(store, &outbox.Config{
		Effects: map[string]outbox.Effect{
			orders.KindCharge:  hang(outbox.HTTP(svc.client, svc.chargesURL)),
			orders.KindReceipt: hang(outbox.HTTP(svc.client, svc.receiptsURL)),
		},
		Concurrency: n, Lease: CrashRelayLease, PollInterval: RelayPollInterval, StopTimeout: time.Millisecond,
		Observer: func(_ context.Context, rep *outbox.Report) {
			if rep.Outcome == outbox.OutcomeUnrecorded {
				cutRows.Add(1)
				if rep.Row.Kind == orders.KindCharge {
					cutCharges.Add(1)
				}
			}
		},
	})
	if err != nil {
		return 0, 0, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	deadline := time.After(crashRelayWait)
	for hung.Load() < int64(n) {
		select {
		case <-deadline:
			cancel()
			<-done
			return 0, 0, fmt.Errorf("the relay to be killed hung on %d of %d rows within %s", hung.Load(), n, crashRelayWait)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		return 0, 0, fmt.Errorf("killed relay: %w", err)
	}
	return int(cutRows.Load()), int(cutCharges.Load()), nil
}
