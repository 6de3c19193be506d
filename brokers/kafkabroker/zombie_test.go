package kafkabroker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// TestZombieCannotApplyStaleChange (case S04): member A of a consumer
// group stalls with E1 (order o1 pending -> charging) in its hands, before
// its transaction begins (a long GC pause). The group moves the partition
// to member B, which applies E1 and then E2 (charging -> shipped). When A
// wakes up, its E1 must not move the order back: the inbox reports it as a
// duplicate (B committed E1), and with the inbox row gone (an id the
// producer regenerated, or a row pruned too early) the guarded transition
// still refuses it, and the message is dead-lettered. The order stays
// shipped, and A's late ack commits nothing the group relies on.
func TestZombieCannotApplyStaleChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 8)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL); INSERT INTO orders VALUES ('o1', 'pending')`)
	require.NoError(t, err)
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)

	transition := func(from, to string) router.HandlerFunc[TTxPG] {
		return func(ctx context.Context, _ TTxPG, _ *message.Message) error {
			pending, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{Table: "orders", Key: "o1", From: []string{from}, To: to})
			if err != nil {
				return err
			}
			res, err := pending.Result(ctx)
			if err != nil {
				return err
			}
			return res.Err()
		}
	}
	handle := func(ctx context.Context, tx TTxPG, msg *message.Message) error {
		if msg.Metadata.Get(ackgap.MetadataEventIDKey) == "E1" {
			return transition("pending", "charging")(ctx, tx, msg)
		}
		return transition("charging", "shipped")(ctx, tx, msg)
	}

	// Member A: stalls on its first message before the transaction.
	stalled, wake := make(chan struct{}), make(chan struct{})
	var once sync.Once
	stall := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			first := false
			once.Do(func() { first = true })
			if first {
				close(stalled)
				<-wake
			}
			return h(msg)
		}
	}
	repA := &reports{}
	tune := func(c *kafkabroker.SubscriberConfig) {
		c.HoldTimeout = time.Second // rebalance timeout 1 s + CommitMargin: A is removed quickly
		c.CloseTimeout = time.Second
	}
	rA, err := router.New[TTxPG](store, &router.Config{DeadLetter: pub, DeadLetterTopic: topic + ".dlq",
		InboxConfig: middleware.InboxConfig{Observer: repA.observe}, Middlewares: []message.HandlerMiddleware{stall}, Logger: testLogger()})
	require.NoError(t, err)
	require.NoError(t, rA.AddHandler("billing", topic, newSubscriber(t, group, tune), handle))
	runA := start(t, rA)

	require.NoError(t, pub.Publish(topic, event(t, "E1", "o1")))
	waitClosed(t, stalled, "member A to take E1")

	// Member B joins; A cannot finish its claim, so the group removes it
	// after its rebalance timeout and B gets the partition.
	repB := &reports{}
	rB, err := router.New[TTxPG](store, &router.Config{DeadLetter: pub, DeadLetterTopic: topic + ".dlq",
		InboxConfig: middleware.InboxConfig{Observer: repB.observe}, Logger: testLogger()})
	require.NoError(t, err)
	require.NoError(t, rB.AddHandler("billing", topic, newSubscriber(t, group, tune), handle))
	runB := start(t, rB)
	eventually(t, 60*time.Second, "member B to apply E1", func() bool {
		return len(repB.outcomes("E1")) > 0
	})
	require.NoError(t, pub.Publish(topic, event(t, "E2", "o1")))
	eventually(t, 30*time.Second, "member B to apply E2", func() bool { return len(repB.outcomes("E2")) > 0 })
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, repB.outcomes("E1"))
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, repB.outcomes("E2"))

	// A wakes up with its stale E1: the inbox stops it.
	close(wake)
	eventually(t, 30*time.Second, "member A to finish its stale E1", func() bool { return len(repA.outcomes("E1")) > 0 })
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeDuplicate}, repA.outcomes("E1"))
	var status string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = 'o1'`).Scan(&status))
	require.Equal(t, "shipped", status)
	require.NoError(t, runA.close())
	require.NoError(t, runB.close())

	// Without the inbox row, the guard is what refuses the stale change.
	_, err = pool.Exec(ctx, `DELETE FROM ackgap_inbox WHERE event_id = 'E1'`)
	require.NoError(t, err)
	inbox, err := middleware.Inbox[TTxPG](store, &middleware.InboxConfig{Consumer: "billing"})
	require.NoError(t, err)
	_, err = inbox(router.Adapt(handle))(event(t, "E1", "o1"))
	require.ErrorIs(t, err, ackgap.ErrTransitionRefused)
	require.True(t, ackgap.IsPermanent(err), "dead-lettered, not retried")
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = 'o1'`).Scan(&status))
	require.Equal(t, "shipped", status, "the order never moves back")
}
