package billingsim

import (
	"context"
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
	// appliedEvents counts events applied at least once.
	appliedEvents int
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
	switch r.Outcome {
	case ackgap.OutcomeApplied:
		e.applied++
		if e.applied == 1 {
			e.committed = r.Committed
			t.appliedEvents++
		} else {
			t.twice++
		}
	case ackgap.OutcomeDuplicate:
		e.dups++
		if e.firstDup.IsZero() || r.Received.Before(e.firstDup) {
			e.firstDup = r.Received
		}
	}
	if !e.done && e.applied >= 1 && e.dups >= e.expectedDups {
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
		applied += min(e.applied, 1)
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
