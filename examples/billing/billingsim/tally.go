package billingsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ackgap/ackgap"
)

// tally counts inbox outcomes (router.Config.Observer), per event.
type tally struct {
	mu       sync.Mutex
	outcomes map[ackgap.Outcome]int
	events   map[string]*eventTally
	// remaining counts events not yet applied with every expected
	// duplicate seen.
	remaining int
	// appliedEvents counts events applied at least once, those of
	// appliedUnreported included.
	appliedEvents int
	// appliedUnreported counts events whose applying commit was reported
	// as of unknown outcome (a failed pass wrapping ackgap.ErrCommitUnknown)
	// and that a later pass found applied (a duplicate) before any pass
	// reported them applied: the commit happened, and no report will say
	// so. A later applied report takes its place.
	appliedUnreported int
	// twice counts events applied more than once: the inbox failed.
	twice int
	// unknown counts reports for event ids the producer never sent.
	unknown int
	// crashID is the event whose delivery the crashed instance committed
	// and never acked (Options.CrashRestart), crashAt when.
	crashID string
	crashAt time.Time
}

type eventTally struct {
	expectedDups, applied, dups int
	// committed is when the applying delivery committed; firstDup when
	// the earliest duplicate reached the inbox.
	committed, firstDup time.Time
	done                bool
	// commitUnknown: a pass failed at its commit, outcome unknown.
	// inferred: applied as appliedUnreported says, shown by the duplicate
	// received at inferredBy.
	commitUnknown, inferred bool
	inferredBy              time.Time
}

// passes counts the passes that applied the event or found it applied
// (the duplicate that stands for an unreported commit included).
func (e *eventTally) passes() int {
	n := e.applied + e.dups
	if e.inferred {
		n++
	}
	return n
}

func newTally(p *plan) *tally {
	t := &tally{outcomes: map[ackgap.Outcome]int{}, events: make(map[string]*eventTally, len(p.events)), remaining: len(p.events)}
	for id, n := range p.expectedDups {
		t.events[id] = &eventTally{expectedDups: n}
	}
	return t
}

// observe is the router's Observer: called once per pass through the
// inbox, after the commit and before the ack. It must not block; it takes
// a mutex held for a few map operations.
func (t *tally) observe(_ context.Context, r *ackgap.InboxReport) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.outcomes[r.Outcome]++
	e := t.events[r.EventID]
	if e == nil {
		t.unknown++
		return
	}
	dup := func(received time.Time) {
		e.dups++
		if e.firstDup.IsZero() || received.Before(e.firstDup) {
			e.firstDup = received
		}
	}
	switch r.Outcome {
	case ackgap.OutcomeApplied:
		e.applied++
		switch {
		case e.inferred:
			// The pass that applied it reports after all, later than a
			// duplicate that found its row: that was a duplicate like any
			// other, and the event is counted applied already.
			e.inferred = false
			t.appliedUnreported--
			e.committed = r.Committed
			dup(e.inferredBy)
		case e.applied == 1:
			e.committed = r.Committed
			t.appliedEvents++
		default:
			t.twice++
		}
	case ackgap.OutcomeDuplicate:
		if e.applied == 0 && !e.inferred && e.commitUnknown {
			// A commit reported as of unknown outcome happened: its
			// redelivery (or a copy) found the inbox row. This duplicate
			// stands for the applied report that will not come.
			e.inferred, e.inferredBy = true, r.Received
			t.appliedUnreported++
			t.appliedEvents++
			break
		}
		dup(r.Received)
	case ackgap.OutcomeFailed:
		if errors.Is(r.Err, ackgap.ErrCommitUnknown) {
			e.commitUnknown = true
		}
	}
	if !e.done && (e.applied >= 1 || e.inferred) && e.dups >= e.expectedDups {
		e.done = true
		t.remaining--
	}
}

func (t *tally) complete() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.remaining == 0
}

// broken returns an error once the inbox applied an event twice or saw an
// event never published: the run cannot end well, so it ends at once.
func (t *tally) broken() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.twice > 0 || t.unknown > 0 {
		return fmt.Errorf("the inbox applied %d events more than once and saw %d deliveries of unknown events: inbox outcomes %v", t.twice, t.unknown, t.outcomes)
	}
	return nil
}

// waitUntil polls cond, under the tally's lock, until it holds or ctx
// ends.
func (t *tally) waitUntil(ctx context.Context, cond func() bool) error {
	for {
		t.mu.Lock()
		ok := cond()
		t.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Microsecond):
		}
	}
}

// progress describes how far the consumer got, for the timeout error.
func (t *tally) progress(p *plan) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	applied, dups, expected := 0, 0, 0
	for _, e := range t.events {
		if e.applied > 0 || e.inferred {
			applied++
		}
		dups += min(e.dups, e.expectedDups)
		expected += e.expectedDups
	}
	return fmt.Sprintf("applied %d/%d events, saw %d/%d injected duplicates, inbox outcomes %v",
		applied, len(p.events), dups, expected, t.outcomes)
}

// raced counts the concurrent pairs whose duplicate reached the inbox
// before the other copy had committed: the two really overlapped, and the
// inbox's unique key, not luck in timing, kept the second one out.
func (t *tally) raced(p *plan) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, i := range p.concurrent {
		e := t.events[p.events[i].id]
		if !e.firstDup.IsZero() && !e.committed.IsZero() && e.firstDup.Before(e.committed) {
			n++
		}
	}
	return n
}

// takeForCrash decides whether the delivery of id that just committed is
// the one a crashing instance never acks (Options.CrashRestart): the first
// delivery, once after applied events, of an event with no other duplicate
// planned, which was applied by this very delivery. If so it expects one
// more duplicate of id: the broker's redelivery.
func (t *tally) takeForCrash(id string, after int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.events[id]
	if t.crashID != "" || t.appliedEvents < after || e == nil || e.expectedDups != 0 || e.applied != 1 || e.dups != 0 {
		return false
	}
	t.crashID, t.crashAt = id, time.Now()
	e.expectedDups++
	if e.done {
		e.done = false
		t.remaining++
	}
	return true
}

// crashed returns the crashed instance's event, how many duplicates of it
// reached the inbox, and how long after the crash the first one did.
func (t *tally) crashed() (id string, dups int, after time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.crashID == "" {
		return "", 0, 0
	}
	e := t.events[t.crashID]
	if !e.firstDup.IsZero() {
		after = e.firstDup.Sub(t.crashAt)
	}
	return t.crashID, e.dups, after
}
