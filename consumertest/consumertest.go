// Package consumertest lets you prove that your own handler survives
// duplicate deliveries, on your own store and schema. It runs the three
// ways a message arrives twice, plus a failed first attempt:
//
//   - SequentialDuplicate: the same event delivered again after it was
//     processed and acked.
//   - CrashInAckGap: the handler's transaction commits, the ack is lost
//     (a crash, an expired lease), and the broker redelivers; it runs
//     through a real Watermill router on a GoChannel.
//   - ConcurrentDuplicate: two copies released together by a barrier, on
//     two goroutines; exactly one applies.
//   - FailedAttemptRetried: the first attempt fails after the handler ran;
//     everything rolls back and the retry applies (nothing is lost).
//
// After each, the state your Snapshot function returns must equal the
// state after exactly one delivery, and the outbox must hold the same rows.
// The reference state is a separate single delivery on a fresh Setup, so
// the handler must write the same state and outbox rows for the same
// message: a random idempotency key, a uuid.New() row id or time.Now() in
// a column makes ConcurrentDuplicate and FailedAttemptRetried fail even
// when only one copy applied. Derive keys and ids from the event id, and
// leave generated columns out of Snapshot.
//
//	func TestBillingSurvivesDuplicates(t *testing.T) {
//		consumertest.Run(t, func(t *testing.T) *consumertest.Setup[*sql.Tx] {
//			store := newMigratedStore(t) // fresh per call
//			return &consumertest.Setup[*sql.Tx]{
//				Store:    store,
//				Handler:  billing.Handle,
//				Message:  func() *message.Message { return placed("o1") },
//				Snapshot: func(t testing.TB) any { return readOrders(t, store) },
//			}
//		})
//	}
package consumertest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

// ConsumerDefault is the consumer name used when Setup.Consumer is empty.
const ConsumerDefault = "consumertest"

// WaitDefault bounds how long the router-based case waits for the
// redelivery before failing.
const WaitDefault = 30 * time.Second

// Setup is one fresh, isolated instance of the consumer under test. Run
// calls your setup function once or twice per case, and each call must
// return independent state (a new schema or database file) set up the same
// way, so snapshots from two calls are comparable.
type Setup[TTx any] struct {
	// Store is migrated and holds the state the handler changes. It must
	// also be a stores.OutboxStore (every ackgap store is): the checks read
	// the outbox back.
	Store stores.Store[TTx]
	// Handler is the handler under test.
	Handler router.HandlerFunc[TTx]
	// Message returns a new copy of one event: same event id, same payload.
	Message func() *message.Message
	// Snapshot returns the state the handler changes, in a form
	// require.Equal can compare (plain structs, slices, maps; no times
	// that differ between runs).
	Snapshot func(t testing.TB) any
	// Consumer is the inbox consumer name. Default ConsumerDefault.
	Consumer string
}

// Run runs every case against fresh setups.
func Run[TTx any](t *testing.T, setup func(t *testing.T) *Setup[TTx]) {
	t.Run("SequentialDuplicate", func(t *testing.T) { SequentialDuplicate(t, setup) })
	t.Run("CrashInAckGap", func(t *testing.T) { CrashInAckGap(t, setup) })
	t.Run("ConcurrentDuplicate", func(t *testing.T) { ConcurrentDuplicate(t, setup) })
	t.Run("FailedAttemptRetried", func(t *testing.T) { FailedAttemptRetried(t, setup) })
}

// state is what a case compares: the user's snapshot and the outbox rows.
type state struct {
	Snapshot any
	Outbox   []outboxRow
}

type outboxRow struct {
	Kind, IdempotencyKey, Payload string
	State                         stores.OutboxState
}

func capture[TTx any](t testing.TB, s *Setup[TTx]) state {
	t.Helper()
	ob, ok := s.Store.(stores.OutboxStore)
	require.True(t, ok, "%T does not implement stores.OutboxStore: the check reads the outbox back", s.Store)
	res, err := ob.ListOutbox(context.Background(), &stores.OutboxListParams{Limit: 100000})
	require.NoError(t, err)
	rows := make([]outboxRow, 0, len(res.Rows))
	for _, r := range res.Rows {
		rows = append(rows, outboxRow{r.Kind, r.IdempotencyKey, string(r.Payload), r.State})
	}
	return state{Snapshot: s.Snapshot(t), Outbox: rows}
}

// recorder collects the inbox reports of one setup.
type recorder struct {
	mu      sync.Mutex
	reports []ackgap.InboxReport
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) observe(_ context.Context, rep *ackgap.InboxReport) {
	r.mu.Lock()
	r.reports = append(r.reports, *rep)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) outcomes() []ackgap.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ackgap.Outcome, 0, len(r.reports))
	for _, rep := range r.reports {
		out = append(out, rep.Outcome)
	}
	return out
}

// deliver builds the inbox chain for s directly, without a broker.
func deliverFunc[TTx any](t testing.TB, s *Setup[TTx], rec *recorder, wrap func(message.HandlerFunc) message.HandlerFunc) message.HandlerFunc {
	t.Helper()
	consumer := s.Consumer
	if consumer == "" {
		consumer = ConsumerDefault
	}
	inbox, err := middleware.Inbox(s.Store, &middleware.InboxConfig{Consumer: consumer, Observer: rec.observe})
	require.NoError(t, err)
	h := router.Adapt(s.Handler)
	if wrap != nil {
		h = wrap(h)
	}
	return inbox(h)
}

// reference returns the state after exactly one delivery on a fresh setup.
func reference[TTx any](t *testing.T, setup func(t *testing.T) *Setup[TTx]) state {
	t.Helper()
	s := setup(t)
	rec := newRecorder()
	_, err := deliverFunc(t, s, rec, nil)(s.Message())
	require.NoError(t, err, "a single delivery must succeed")
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, rec.outcomes())
	return capture(t, s)
}

// SequentialDuplicate delivers the event, then a copy of it: the copy is
// reported as a duplicate and changes nothing.
func SequentialDuplicate[TTx any](t *testing.T, setup func(t *testing.T) *Setup[TTx]) {
	s := setup(t)
	rec := newRecorder()
	deliver := deliverFunc(t, s, rec, nil)
	_, err := deliver(s.Message())
	require.NoError(t, err)
	first := capture(t, s)
	_, err = deliver(s.Message())
	require.NoError(t, err, "a duplicate is acked, not failed")
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate}, rec.outcomes())
	require.Equal(t, first, capture(t, s), "the duplicate changed state or the outbox")
}

var errAckLost = errors.New("consumertest: ack lost after commit")

// CrashInAckGap runs the handler behind a real router on a GoChannel. The
// first delivery commits, then its ack is lost (a middleware outside the
// chain fails after the commit), so GoChannel redelivers it; the
// redelivery is a duplicate and changes nothing.
func CrashInAckGap[TTx any](t *testing.T, setup func(t *testing.T) *Setup[TTx]) {
	s := setup(t)
	rec := newRecorder()
	consumer := s.Consumer
	if consumer == "" {
		consumer = ConsumerDefault
	}
	logger := watermill.NopLogger{}
	pubsub := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, logger)
	defer func() { _ = pubsub.Close() }()

	var (
		once        sync.Once
		afterCommit state
	)
	dropFirstAck := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			if err != nil {
				return produced, err
			}
			lost := false
			once.Do(func() {
				afterCommit = capture(t, s) // committed, not yet acked
				lost = true
			})
			if lost {
				return nil, errAckLost
			}
			return produced, nil
		}
	}
	r, err := router.New(s.Store, &router.Config{
		DeadLetter: pubsub, InboxConfig: middleware.InboxConfig{Observer: rec.observe}, Middlewares: []message.HandlerMiddleware{dropFirstAck},
		CloseTimeout: 10 * time.Second,
	})
	require.NoError(t, err)
	require.NoError(t, r.AddHandler(consumer, "consumertest.events", pubsub, s.Handler))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-r.Running()
	require.NoError(t, pubsub.Publish("consumertest.events", s.Message()))

	deadline := time.After(WaitDefault)
	for len(rec.outcomes()) < 2 {
		select {
		case <-rec.changed:
		case <-deadline:
			t.Fatalf("no redelivery within %s; outcomes so far: %v", WaitDefault, rec.outcomes())
		}
	}
	require.NoError(t, r.Close())
	require.NoError(t, <-done)
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate}, rec.outcomes())
	require.Equal(t, afterCommit, capture(t, s), "the redelivery after the lost ack changed state or the outbox")
}

// ConcurrentDuplicate releases two copies at once on two goroutines: one
// applies, the other is a duplicate, and the state equals one delivery's.
func ConcurrentDuplicate[TTx any](t *testing.T, setup func(t *testing.T) *Setup[TTx]) {
	want := reference(t, setup)
	s := setup(t)
	rec := newRecorder()
	deliver := deliverFunc(t, s, rec, func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			//ackgapvet:ignore sleep the suite holds the transaction open so the two copies overlap
			time.Sleep(20 * time.Millisecond)
			return produced, err
		}
	})
	start := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		msg := s.Message()
		go func() {
			<-start
			_, err := deliver(msg)
			errs <- err
		}()
	}
	close(start)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	require.ElementsMatch(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate}, rec.outcomes())
	require.Equal(t, want, capture(t, s), "two concurrent copies did not leave the state of one delivery")
}

var errInjected = errors.New("consumertest: injected failure after the handler ran")

// FailedAttemptRetried fails the first attempt after the handler ran, so
// its writes must roll back with the inbox row; the retry then applies.
func FailedAttemptRetried[TTx any](t *testing.T, setup func(t *testing.T) *Setup[TTx]) {
	want := reference(t, setup)
	s := setup(t)
	before := capture(t, s)
	rec := newRecorder()
	failed := false
	deliver := deliverFunc(t, s, rec, func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			if err == nil && !failed {
				failed = true
				return nil, errInjected
			}
			return produced, err
		}
	})
	_, err := deliver(s.Message())
	require.ErrorIs(t, err, errInjected)
	require.Equal(t, before, capture(t, s), "a failed attempt left state or outbox rows behind")
	_, err = deliver(s.Message())
	require.NoError(t, err, "the retry must apply")
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed, ackgap.OutcomeApplied}, rec.outcomes())
	require.Equal(t, want, capture(t, s), "the retry did not leave the state of one delivery")
}
