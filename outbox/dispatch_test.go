package outbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// dispatching waits until relay's Run takes dispatched rows.
func dispatching(t *testing.T, relay *outbox.Relay) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, ok := relay.HoldOutbox()
		if ok {
			relay.DispatchOutbox(nil, 1)
		}
		return ok
	}, 10*time.Second, time.Millisecond)
}

// deliver runs msg through handler behind the inbox middleware m, as a
// router would.
func deliver(t *testing.T, m message.HandlerMiddleware, eventID string, handler func(ctx context.Context) error) error {
	t.Helper()
	msg := message.NewMessage(eventID, []byte(eventID))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
	_, err := m(func(msg *message.Message) ([]*message.Message, error) { return nil, handler(msg.Context()) })(msg)
	return err
}

// roomLeft asserts that every reservation of relay ended: it can hold
// DispatchLimit rows again (released at once).
func roomLeft(t *testing.T, relay *outbox.Relay, limit int) {
	t.Helper()
	require.Eventually(t, func() bool {
		n := 0
		for ; n < limit; n++ {
			if _, ok := relay.HoldOutbox(); !ok {
				break
			}
		}
		relay.DispatchOutbox(nil, n)
		return n == limit
	}, 10*time.Second, 5*time.Millisecond, "every reservation ended")
}

// TestDispatch: rows added behind the inbox with the relay as its
// Dispatch are carried out right after the commit without a claim
// (reports without a claim token, rows done with attempts 1), each key
// once; a handler that fails after adding rows has them rolled back and
// never carried out; every reservation ends.
func TestDispatch(t *testing.T) {
	bothStores(t,
		func(t *testing.T, b *backend[*sqlTx]) { dispatch(t, b) },
		func(t *testing.T, b *backend[pgx.Tx]) { dispatch(t, b) })
}

func dispatch[TTx any](t *testing.T, b *backend[TTx]) {
	p := newProvider(t)
	reps := newReports()
	cfg := fast(map[string]outbox.Effect{"charge": p.effect()}, reps)
	cfg.DispatchLimit = 8
	relay, err := outbox.New(b.store, cfg)
	require.NoError(t, err)
	running(t, relay)
	dispatching(t, relay)
	m, err := middleware.Inbox(b.store, &middleware.InboxConfig{Consumer: "billing", Dispatch: relay})
	require.NoError(t, err)

	const events = 30
	var want []string
	for i := range events {
		id := fmt.Sprintf("ev-%02d", i)
		keys := []string{"charge:" + id + ":a", "charge:" + id + ":b"}
		err := deliver(t, m, id, func(ctx context.Context) error {
			for _, k := range keys {
				row := charge(k)
				if err := ackgap.AddOutbox(ctx, &row); err != nil {
					return err
				}
			}
			if i%10 == 3 {
				return errors.New("handler failed after adding its rows")
			}
			return nil
		})
		if i%10 == 3 {
			require.Error(t, err)
			continue
		}
		require.NoError(t, err)
		want = append(want, keys...)
	}
	require.Eventually(t, func() bool { return len(p.callsPerKey()) >= len(want) }, 20*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return backlog(t, b.store) == 0 }, 20*time.Second, 5*time.Millisecond)

	calls := p.callsPerKey()
	require.Len(t, calls, len(want), "only the rows of committed messages were carried out")
	for _, k := range want {
		require.Equal(t, 1, calls[k], "key %s carried out once", k)
	}
	dispatched := 0
	reps.mu.Lock()
	list := append([]outbox.Report(nil), reps.list...)
	reps.mu.Unlock()
	for _, rep := range list {
		if rep.Row.Claim.Token == "" {
			dispatched++
			require.Equal(t, outbox.OutcomeDone, rep.Outcome, rep.Row.IdempotencyKey)
		}
	}
	require.Positive(t, dispatched, "rows were dispatched, not only claimed")
	idOf := map[string]int64{}
	for _, r := range rowsByID(t, b.store) {
		require.Equal(t, []any{stores.OutboxDone, 1}, []any{r.State, r.Attempts}, r.IdempotencyKey)
		idOf[r.IdempotencyKey] = r.ID
	}
	for _, rep := range list {
		require.Equal(t, idOf[rep.Row.IdempotencyKey], rep.Row.ID, "a dispatched row's report carries its real id (issue 25): %s", rep.Row.IdempotencyKey)
	}
	roomLeft(t, relay, cfg.DispatchLimit)
}

// TestDispatchDeadLogsID: a dispatched row whose effect fails permanently
// is logged "row is dead" with its real outbox_id, not 0 (issue 25): the
// id comes back from the statement that records the outcome.
func TestDispatchDeadLogsID(t *testing.T) {
	bothStores(t,
		func(t *testing.T, b *backend[*sqlTx]) { dispatchDeadLogsID(t, b) },
		func(t *testing.T, b *backend[pgx.Tx]) { dispatchDeadLogsID(t, b) })
}

func dispatchDeadLogsID[TTx any](t *testing.T, b *backend[TTx]) {
	reps := newReports()
	refuse := func(context.Context, stores.OutboxRow) error {
		return ackgap.Permanent("refused", errors.New("provider refused the charge"))
	}
	cfg := fast(map[string]outbox.Effect{"charge": refuse}, reps)
	var logs bytes.Buffer
	var logMu sync.Mutex
	cfg.Logger = watermill.NewSlogLogger(slog.New(slog.NewJSONHandler(lockedWriter{&logMu, &logs}, nil)))
	relay, err := outbox.New(b.store, cfg)
	require.NoError(t, err)
	running(t, relay)
	dispatching(t, relay)
	m, err := middleware.Inbox(b.store, &middleware.InboxConfig{Consumer: "billing", Dispatch: relay})
	require.NoError(t, err)
	require.NoError(t, deliver(t, m, "ev-dead", func(ctx context.Context) error {
		row := charge("charge:ev-dead")
		return ackgap.AddOutbox(ctx, &row)
	}))
	rep := reps.next(t)
	require.Equal(t, outbox.OutcomeDead, rep.Outcome)
	require.Empty(t, rep.Row.Claim.Token, "dispatched, not claimed")
	var id int64
	for _, r := range rowsByID(t, b.store) {
		id = r.ID
	}
	require.NotZero(t, id)
	require.Equal(t, id, rep.Row.ID)
	logMu.Lock()
	text := logs.String()
	logMu.Unlock()
	var found bool
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		if r["msg"] == "outbox relay: row is dead" {
			found = true
			require.EqualValues(t, id, r["outbox_id"], line)
		}
	}
	require.True(t, found, "logged: %s", text)
}

// lockedWriter serialises writes to w, for a log read while it is written.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lostDispatcher holds rows like a relay's dispatcher but loses them, as a
// process that dies between its commit and its effects does.
type lostDispatcher struct {
	hold time.Duration
	mu   sync.Mutex
	held []time.Time
}

func (d *lostDispatcher) HoldOutbox() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	until := time.Now().Add(d.hold)
	d.held = append(d.held, until)
	return until, true
}

func (d *lostDispatcher) DispatchOutbox([]ackgap.OutboxEntry, int) {}

// TestDispatchLost: rows held for a dispatcher that never carries them out
// (the process died after its commit) are claimed by a relay once their
// hold lapsed, not before, and carried out once.
func TestDispatchLost(t *testing.T) {
	bothStores(t,
		func(t *testing.T, b *backend[*sqlTx]) { dispatchLost(t, b) },
		func(t *testing.T, b *backend[pgx.Tx]) { dispatchLost(t, b) })
}

func dispatchLost[TTx any](t *testing.T, b *backend[TTx]) {
	p := newProvider(t)
	reps := newReports()
	lost := &lostDispatcher{hold: 500 * time.Millisecond}
	m, err := middleware.Inbox(b.store, &middleware.InboxConfig{Consumer: "billing", Dispatch: lost})
	require.NoError(t, err)
	require.NoError(t, deliver(t, m, "ev-lost", func(ctx context.Context) error {
		row := charge("charge:lost")
		return ackgap.AddOutbox(ctx, &row)
	}))
	// The operator's counts see the row held until its hold ends, and due
	// from then on: judged at instants before and at the hold's end, so
	// the clock of a busy machine does not matter.
	require.Len(t, lost.held, 1)
	until := lost.held[0].Truncate(time.Microsecond)
	ctx := context.Background()
	st, err := b.store.OutboxStats(ctx, &stores.OutboxStatsParams{Now: until.Add(-time.Millisecond)})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 1, 0}, []int64{st.Pending, st.Held, st.Backoff}, "written held")
	st, err = b.store.OutboxStats(ctx, &stores.OutboxStatsParams{Now: until})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 0, 0}, []int64{st.Pending, st.Held, st.Backoff}, "due when the hold ends")
	op, ok := any(b.store).(stores.Operator)
	require.True(t, ok)
	ops, err := op.Stats(ctx, &stores.StatsParams{Now: until.Add(-time.Millisecond)})
	require.NoError(t, err)
	require.EqualValues(t, 1, ops.Held)
	require.True(t, ops.HeldUntil.Equal(until), "held until %s, not %s", until, ops.HeldUntil)
	require.True(t, ops.OldestDueAt.IsZero(), "a held row is not due")
	relay, err := outbox.New(b.store, fast(map[string]outbox.Effect{"charge": p.effect()}, reps))
	require.NoError(t, err)
	running(t, relay)
	rep := reps.next(t)
	require.Equal(t, outbox.OutcomeDone, rep.Outcome)
	require.NotEmpty(t, rep.Row.Claim.Token, "claimed by the relay, not dispatched")
	require.Len(t, lost.held, 1)
	require.False(t, rep.Claimed.Before(lost.held[0].Add(-time.Millisecond)), "claimed at %s, before the hold ended at %s", rep.Claimed, lost.held[0])
	require.Equal(t, map[string]int{"charge:lost": 1}, p.callsPerKey())
}

// TestDispatchNotRunning: with the relay not running, rows are written due
// at once and relays claim them as usual.
func TestDispatchNotRunning(t *testing.T) {
	b := sqliteBackend(t)
	p := newProvider(t)
	reps := newReports()
	relay, err := outbox.New(b.store, fast(map[string]outbox.Effect{"charge": p.effect()}, reps))
	require.NoError(t, err)
	m, err := middleware.Inbox(b.store, &middleware.InboxConfig{Consumer: "billing", Dispatch: relay})
	require.NoError(t, err)
	before := time.Now()
	require.NoError(t, deliver(t, m, "ev-1", func(ctx context.Context) error {
		row := charge("charge:one")
		return ackgap.AddOutbox(ctx, &row)
	}))
	rows := rowsByID(t, b.store)
	require.Len(t, rows, 1)
	for _, r := range rows {
		require.WithinDuration(t, before, r.AvailableAt, time.Second, "due at once, not held")
	}
	running(t, relay)
	rep := reps.next(t)
	require.Equal(t, outbox.OutcomeDone, rep.Outcome)
	require.NotEmpty(t, rep.Row.Claim.Token)
}

// TestDispatchTransitions (PostgreSQL): the rows of a guarded transition
// are dispatched only when it applied: those of a transition already
// applied (its rows not written) are never carried out, read or unread by
// the handler; a refused one fails the message and dispatches nothing.
func TestDispatchTransitions(t *testing.T) {
	b := pgBackend(t, 8)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL);
INSERT INTO orders VALUES ('o1', 'pending'), ('o2', 'paid'), ('o3', 'pending'), ('o4', 'paid'), ('o5', 'shipped')`)
	require.NoError(t, err)
	p := newProvider(t)
	relay, err := outbox.New(b.store, fast(map[string]outbox.Effect{"charge": p.effect()}, nil))
	require.NoError(t, err)
	running(t, relay)
	dispatching(t, relay)
	m, err := middleware.Inbox(b.store, &middleware.InboxConfig{Consumer: "billing", Dispatch: relay})
	require.NoError(t, err)
	pay := func(order string, read bool) error {
		return deliver(t, m, "pay-"+order, func(ctx context.Context) error {
			row := charge("charge:" + order)
			pt, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{Table: "orders", Key: order, From: []string{"pending"}, To: "paid"}, &row)
			if err != nil || !read {
				return err
			}
			_, err = pt.Result(ctx)
			return err
		})
	}
	require.NoError(t, pay("o1", false), "applies, unread")
	require.NoError(t, pay("o2", false), "already paid, unread")
	require.NoError(t, pay("o3", true), "applies, read")
	require.NoError(t, pay("o4", true), "already paid, read")
	require.ErrorIs(t, pay("o5", false), ackgap.ErrTransitionRefused)

	require.Eventually(t, func() bool { return len(p.callsPerKey()) >= 2 && backlog(t, b.store) == 0 }, 20*time.Second, 5*time.Millisecond)
	roomLeft(t, relay, outbox.DispatchLimitDefault)
	require.Equal(t, map[string]int{"charge:o1": 1, "charge:o3": 1}, p.callsPerKey(), "only the applied transitions' rows")
}

// TestDispatchBatch (PostgreSQL): in package batch, rows a BatchHandler
// adds with ackgap.AddOutboxMany are dispatched after the batch's commit;
// when it fails, its rows are rolled back and never dispatched, the
// per-message Handler runs, and the rows of a message whose Handler fails
// are never carried out either.
func TestDispatchBatch(t *testing.T) {
	b := pgBackend(t, 8)
	p := newProvider(t)
	reps := newReports()
	relay, err := outbox.New(b.store, fast(map[string]outbox.Effect{"charge": p.effect()}, reps))
	require.NoError(t, err)
	running(t, relay)
	dispatching(t, relay)
	rowsOf := func(msgs ...*message.Message) []ackgap.OutboxEntry {
		var rows []ackgap.OutboxEntry
		for _, msg := range msgs {
			row := charge("charge:" + string(msg.Payload))
			row.EventID = msg.UUID
			rows = append(rows, row)
		}
		return rows
	}
	proc, err := batch.New[pgx.Tx](b.store.(*pgxstore.Store), &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing", Dispatch: relay},
		BatchHandler: func(ctx context.Context, _ pgx.Tx, msgs []*message.Message) error {
			if err := ackgap.AddOutboxMany(ctx, rowsOf(msgs...)); err != nil {
				return err
			}
			for _, msg := range msgs {
				if string(msg.Payload) == "bad" {
					return errors.New("a bad message in the batch")
				}
			}
			return nil
		},
		Handler: func(ctx context.Context, _ pgx.Tx, msg *message.Message) error {
			if err := ackgap.AddOutboxMany(ctx, rowsOf(msg)); err != nil {
				return err
			}
			if string(msg.Payload) == "bad" {
				return ackgap.Permanent("bad_payload", errors.New("bad"))
			}
			return nil
		},
	})
	require.NoError(t, err)
	batchOf := func(payloads ...string) []*message.Message {
		msgs := make([]*message.Message, len(payloads))
		for i, pl := range payloads {
			msgs[i] = message.NewMessage("ev-"+pl, []byte(pl))
			msgs[i].Metadata.Set(ackgap.MetadataEventIDKey, "ev-"+pl)
		}
		return msgs
	}
	ctx := context.Background()
	res, err := proc.Process(ctx, batchOf("a1", "a2", "a3"))
	require.NoError(t, err)
	require.Equal(t, 3, res.Count(ackgap.OutcomeApplied))
	res, err = proc.Process(ctx, batchOf("b1", "bad", "b2"))
	require.NoError(t, err)
	require.Equal(t, []int{2, 1}, []int{res.Count(ackgap.OutcomeApplied), res.Count(ackgap.OutcomeRejected)})

	want := map[string]int{"charge:a1": 1, "charge:a2": 1, "charge:a3": 1, "charge:b1": 1, "charge:b2": 1}
	require.Eventually(t, func() bool { return len(p.callsPerKey()) >= len(want) && backlog(t, b.store) == 0 }, 20*time.Second, 5*time.Millisecond)
	roomLeft(t, relay, outbox.DispatchLimitDefault)
	require.Equal(t, want, p.callsPerKey())
	reps.mu.Lock()
	defer reps.mu.Unlock()
	for _, rep := range reps.list {
		require.Empty(t, rep.Row.Claim.Token, "%s dispatched, not claimed", rep.Row.IdempotencyKey)
	}
}

// TestDispatchReleasedOnStop: a relay that stops releases the dispatched
// rows whose effect had not started (due at once, one attempt counted, a
// note as last error), so another relay carries them out at once instead
// of after the hold; the row whose effect was cut short by the stop keeps
// its hold, as one whose process died.
func TestDispatchReleasedOnStop(t *testing.T) {
	bothStores(t,
		func(t *testing.T, b *backend[*sqlTx]) { dispatchReleasedOnStop(t, b) },
		func(t *testing.T, b *backend[pgx.Tx]) { dispatchReleasedOnStop(t, b) })
}

func dispatchReleasedOnStop[TTx any](t *testing.T, b *backend[TTx]) {
	started := make(chan string, 10)
	blocking := func(ctx context.Context, row stores.OutboxRow) error {
		started <- row.IdempotencyKey
		<-ctx.Done()
		return ctx.Err()
	}
	cfg := fast(map[string]outbox.Effect{"charge": blocking}, nil)
	cfg.Concurrency, cfg.Lease, cfg.StopTimeout = 1, time.Minute, 50*time.Millisecond
	relay, err := outbox.New(b.store, cfg)
	require.NoError(t, err)
	stop := running(t, relay)
	dispatching(t, relay)
	m, err := middleware.Inbox(b.store, &middleware.InboxConfig{Consumer: "billing", Dispatch: relay})
	require.NoError(t, err)
	for i := range 4 {
		require.NoError(t, deliver(t, m, fmt.Sprintf("ev-%d", i), func(ctx context.Context) error {
			row := charge(fmt.Sprintf("charge:r%d", i))
			return ackgap.AddOutbox(ctx, &row)
		}))
	}
	var first string
	select {
	case first = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("no effect started")
	}
	stop()

	stopped := time.Now()
	var released []string
	for _, r := range rowsByID(t, b.store) {
		if r.IdempotencyKey == first {
			require.Equal(t, []any{stores.OutboxPending, 0}, []any{r.State, r.Attempts}, "cut short: still held")
			require.True(t, r.AvailableAt.After(stopped.Add(30*time.Second)), "its hold stands")
			continue
		}
		require.Equal(t, []any{stores.OutboxPending, 1, "released unstarted by a stopping relay"}, []any{r.State, r.Attempts, r.LastError}, r.IdempotencyKey)
		require.False(t, r.AvailableAt.After(stopped), "%s due at once", r.IdempotencyKey)
		released = append(released, r.IdempotencyKey)
	}
	require.Len(t, released, 3)

	p := newProvider(t)
	other, err := outbox.New(b.store, fast(map[string]outbox.Effect{"charge": p.effect()}, nil))
	require.NoError(t, err)
	running(t, other)
	require.Eventually(t, func() bool { return len(p.callsPerKey()) == 3 }, 10*time.Second, 5*time.Millisecond,
		"the released rows are claimed at once, not after the minute's hold")
	for _, k := range released {
		require.Equal(t, 1, p.callsPerKey()[k])
	}
}

// TestDispatchReleasedWhenCommittedDuringStop: rows a handler added while
// the relay ran, but whose transaction committed after the relay began
// to stop (a router and its relay stopped by the same signal, the
// handler still in flight), are released too, due at once, instead of
// held for a Lease: Run waits, within StopTimeout, for the reservations
// it granted.
func TestDispatchReleasedWhenCommittedDuringStop(t *testing.T) {
	bothStores(t,
		func(t *testing.T, b *backend[*sqlTx]) { dispatchReleasedWhenCommittedDuringStop(t, b) },
		func(t *testing.T, b *backend[pgx.Tx]) { dispatchReleasedWhenCommittedDuringStop(t, b) })
}

func dispatchReleasedWhenCommittedDuringStop[TTx any](t *testing.T, b *backend[TTx]) {
	p := newProvider(t)
	cfg := fast(map[string]outbox.Effect{"charge": p.effect()}, nil)
	cfg.Lease, cfg.StopTimeout = time.Minute, 30*time.Second
	relay, err := outbox.New(b.store, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- relay.Run(ctx) }()
	dispatching(t, relay)
	m, err := middleware.Inbox(b.store, &middleware.InboxConfig{Consumer: "billing", Dispatch: relay})
	require.NoError(t, err)

	added, commit := make(chan struct{}), make(chan struct{})
	delivered := make(chan error, 1)
	go func() {
		delivered <- deliver(t, m, "ev-late", func(ctx context.Context) error {
			row := charge("charge:late")
			if err := ackgap.AddOutbox(ctx, &row); err != nil {
				return err
			}
			close(added)
			<-commit
			return nil
		})
	}()
	<-added
	cancel() // the relay stops while the handler is in flight
	require.Eventually(t, func() bool {
		_, ok := relay.HoldOutbox()
		if ok {
			relay.DispatchOutbox(nil, 1)
		}
		return !ok
	}, 10*time.Second, time.Millisecond, "the relay stops taking rows")
	close(commit)
	require.NoError(t, <-delivered)
	require.NoError(t, <-runDone)

	stopped := time.Now()
	rows := rowsByID(t, b.store)
	require.Len(t, rows, 1)
	for _, r := range rows {
		require.Equal(t, []any{stores.OutboxPending, 1, "released unstarted by a stopping relay"}, []any{r.State, r.Attempts, r.LastError}, "released, not held for the Lease")
		require.False(t, r.AvailableAt.After(stopped), "due at once")
	}
	require.Empty(t, p.callsPerKey(), "the stopping relay does not call it")
}
