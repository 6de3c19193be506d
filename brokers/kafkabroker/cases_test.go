package kafkabroker_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

// failFirstCommit is a store whose first commit fails: the transaction is
// rolled back and an error returned, as when the database drops the
// connection during COMMIT.
type failFirstCommit struct {
	stores.Store[*sql.Tx]
	failed atomic.Bool
}

var errInjectedCommit = errors.New("injected: COMMIT failed")

func (s *failFirstCommit) CommitTx(ctx context.Context, tx *sql.Tx) error {
	if s.failed.CompareAndSwap(false, true) {
		_ = s.Store.RollbackTx(ctx, tx)
		return errInjectedCommit
	}
	return s.Store.CommitTx(ctx, tx)
}

// TestS06FailedCommitNotMarkedAtClose (case S06, from IBM/sarama #1893 and
// #1843): m1's COMMIT fails and the router waits to retry it in place;
// the consumer is closed during that backoff. Nothing may mark m1's
// offset: after the close the group has not moved past m1, m2 (same
// partition) was never started, and a restart applies E1 once, then E2.
func TestS06FailedCommitNotMarkedAtClose(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)
	require.NoError(t, pub.Publish(topic, event(t, "E1", "order-1"), event(t, "E2", "order-1")))

	store := &failFirstCommit{Store: b.store}
	rep := &reports{}
	cfg := &router.Config{
		DeadLetter: pub, DeadLetterTopic: topic + ".dlq", InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger(),
		RetryInitialInterval: 10 * time.Second, RetryMaxInterval: 10 * time.Second, // the close lands in this backoff
	}
	r, err := router.New[*sql.Tx](store, cfg)
	require.NoError(t, err)
	sub := newSubscriber(t, group, func(c *kafkabroker.SubscriberConfig) { c.CloseTimeout = 500 * time.Millisecond })
	require.NoError(t, r.AddHandler("billing", topic, sub, applyHandler(b)))
	rn := start(t, r)
	eventually(t, 30*time.Second, "E1's failed commit", func() bool { return len(rep.outcomes("E1")) == 1 })
	require.NoError(t, rn.close())

	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed}, rep.outcomes("E1"))
	require.Empty(t, rep.outcomes("E2"), "m2 must not start while m1 is unsettled")
	require.Empty(t, b.applied(t), "nothing committed")

	rep2 := &reports{}
	cfg.Observer = rep2.observe
	r2, err := router.New[*sql.Tx](store, cfg)
	require.NoError(t, err)
	require.NoError(t, r2.AddHandler("billing", topic, newSubscriber(t, group, nil), applyHandler(b)))
	rn2 := start(t, r2)
	eventually(t, 30*time.Second, "E1 and E2 applied after the restart", func() bool {
		return len(rep2.outcomes("E1")) == 1 && len(rep2.outcomes("E2")) == 1
	})
	require.NoError(t, rn2.close())
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, rep2.outcomes("E1"), "m1 was redelivered: its offset was not committed")
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, rep2.outcomes("E2"))
	require.Equal(t, map[string]int{"E1": 1, "E2": 1}, b.applied(t))
	assertNothingRedelivered(t, topic, group)
}
