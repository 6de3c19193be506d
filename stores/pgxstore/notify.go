package pgxstore

import (
	"context"
	"sync"
	"time"
)

// NotifyIntervalDefault is the default of Config.NotifyInterval: at most
// one pg_notify per 10 ms per Store, so a relay learns of a committed
// outbox row within 10 ms (plus a round trip) instead of at its next poll.
const NotifyIntervalDefault = 10 * time.Millisecond

// notifyTimeout bounds the trailing pg_notify of a notifier.
const notifyTimeout = 5 * time.Second

// notifier coalesces the wake-ups of outbox relays: of all the commits
// that wrote outbox rows within one interval, the first sends pg_notify in
// its COMMIT's round trip (leading edge) and the others arm one trailing
// pg_notify, sent on a pooled connection once the interval since the last
// one has passed. A relay is thus woken at most once per interval per
// Store, and at most one interval after any commit that wrote rows: a
// notification is never sent before the commit it announces, since a
// commit that skips the leading edge arms (or finds armed) the trailing
// one only after its COMMIT returned.
type notifier struct {
	interval time.Duration
	send     func(ctx context.Context) error // the trailing pg_notify

	mu    sync.Mutex
	last  time.Time // when the last notification was sent or queued
	armed *time.Timer
}

// lead reports whether a commit about to be sent should carry the
// notification (the interval since the last one has passed); if so it
// counts as sent.
func (n *notifier) lead(now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.armed != nil || now.Sub(n.last) < n.interval {
		return false
	}
	n.last = now
	return true
}

// trail is called after a commit that wrote outbox rows and did not carry
// the notification: it arms the trailing notification unless one is
// armed already (which is then sent after this commit, covering it).
func (n *notifier) trail(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.armed != nil {
		return
	}
	n.armed = time.AfterFunc(max(n.interval-now.Sub(n.last), 0), func() {
		n.mu.Lock()
		n.armed = nil
		n.last = time.Now()
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		defer cancel()
		// A failure only costs the wake-up: relays poll too.
		_ = n.send(ctx)
	})
}
