package pgxstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// TestNotifyCoalesced: many commits that wrote outbox rows wake a listening
// relay at most once per NotifyInterval (plus the leading one), and a
// notification always follows the last commit, so no row waits for the
// poll.
func TestNotifyCoalesced(t *testing.T) {
	ctx := context.Background()
	const interval = 250 * time.Millisecond
	store, _ := migrated(t, &pgxstore.Config{NotifyInterval: interval})

	var mu sync.Mutex
	var at []time.Time
	listening := make(chan struct{}, 1)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- store.ListenOutbox(lctx, &stores.OutboxListenParams{Notify: func() {
			mu.Lock()
			at = append(at, time.Now())
			mu.Unlock()
			select {
			case listening <- struct{}{}:
			default:
			}
		}})
	}()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification once listening began")
	}
	mu.Lock()
	at = nil
	mu.Unlock()

	start := time.Now()
	const commits = 40
	for i := range commits {
		key := fmt.Sprintf("coalesce-%d", i)
		res, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: key})
		require.NoError(t, err)
		require.NoError(t, store.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: key}))
		require.NoError(t, store.CommitTx(ctx, res.Tx))
	}
	last := time.Now()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(at) > 0 && at[len(at)-1].After(last)
	}, 10*time.Second, 5*time.Millisecond, "a notification after the last commit")
	cancel()
	require.NoError(t, <-done)

	mu.Lock()
	defer mu.Unlock()
	// Notifications are sent at least interval apart (the arrival of two
	// may come closer by the jitter of delivery: allow one more).
	bound := 2 + int(time.Since(start)/interval)
	require.LessOrEqual(t, len(at), bound, "at most one notification per interval, not one per commit (%d commits)", commits)
}

// TestNotifyIntervalInvalid: a negative interval is a configuration error.
func TestNotifyIntervalInvalid(t *testing.T) {
	pool, _ := testdb.Schema(t, 1)
	_, err := pgxstore.New(pool, &pgxstore.Config{NotifyInterval: -time.Second})
	require.ErrorContains(t, err, "NotifyInterval is -1s, must not be negative")
}

// TestNotifyOnlyDueRows: a commit whose outbox rows are all due later
// (held for direct dispatch, or delayed) wakes no relay: a claim would
// find nothing; the next commit with a row due now does.
func TestNotifyOnlyDueRows(t *testing.T) {
	ctx := context.Background()
	store, _ := migrated(t, &pgxstore.Config{NotifyInterval: time.Nanosecond})
	got := make(chan struct{}, 100)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- store.ListenOutbox(lctx, &stores.OutboxListenParams{Notify: func() { got <- struct{}{} }})
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case <-got: // the notification listening begins with
	case <-time.After(10 * time.Second):
		t.Fatal("no notification once listening began")
	}
	commit := func(key string, availableAt time.Time) {
		res, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "c1", EventID: key})
		require.NoError(t, err)
		require.NoError(t, store.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: key, AvailableAt: availableAt}))
		require.NoError(t, store.CommitTx(ctx, res.Tx))
	}
	commit("held", time.Now().Add(time.Minute))
	commit("due", time.Time{})
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification after the commit of a due row")
	}
	// pg_notify of one session arrives in commit order: the held row's
	// commit, had it notified, would have come first and be waiting.
	select {
	case <-got:
		t.Fatal("two notifications: the commit of a held row woke the relays")
	case <-time.After(100 * time.Millisecond):
	}
}
