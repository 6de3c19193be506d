package kafkabroker_test

import (
	"context"
	"fmt"
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

// TestS04RevokedOwnerTakesNoBufferedMessages is case S04 (rebalance replay
// / zombie owner, from ThreeDotsLabs/watermill-kafka PR #31,
// cloudevents/sdk-go #817, IBM/sarama #2118): "1 partition, m1..m10 =
// E1..E10, each counter += 1. Consumer A commits through m4; while A is
// inside m5's handler and has m6, m7 buffered, revoke the partition and
// assign it to consumer B (B starts at m5). Expected: A takes no new
// message from the claim after revoke (m6, m7 never reach A's handler:
// handled_after_revoke=0); A's m5 either commits (then its ack/commit fails
// harmlessly) or aborts. Final counter == 10, 10 processed_events rows,
// duplicates_skipped is 1 if A committed m5 else 0; A's commit failures are
// non-fatal."
//
// On kfake and PostgreSQL. All ten records are published before A starts,
// so A's claim has m6 and m7 fetched when A stalls in m5's handler (before
// its transaction, like a long GC pause). B joins; A cannot finish its
// claim, so the group moves the partition to B after A's rebalance
// timeout. Then A wakes up and finishes m5, and is closed.
func TestS04RevokedOwnerTakesNoBufferedMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 8)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE counters (id text PRIMARY KEY, n integer NOT NULL); INSERT INTO counters VALUES ('c', 0)`)
	require.NoError(t, err)
	topic, group := unique("counter"), unique("billing")
	pub := newPublisher(t)
	for i := 1; i <= 10; i++ {
		msg := event(t, fmt.Sprintf("E%d", i), "one-key") // one key: one partition, in order
		require.NoError(t, pub.Publish(topic, msg))
	}

	count := func(ctx context.Context, tx TTxPG, _ *message.Message) error {
		_, err := tx.Exec(ctx, `UPDATE counters SET n = n + 1 WHERE id = 'c'`)
		return err
	}
	tune := func(c *kafkabroker.SubscriberConfig) {
		c.HoldTimeout = time.Second // rebalance timeout 1 s + CommitMargin: A is removed quickly
		c.CloseTimeout = time.Second
	}

	// Member A records every message that reaches its handler chain and
	// stalls on E5.
	var mu sync.Mutex
	var handledByA []string
	stalled, wake := make(chan struct{}), make(chan struct{})
	stallOnE5 := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
			mu.Lock()
			handledByA = append(handledByA, id)
			mu.Unlock()
			if id == "E5" {
				select {
				case <-stalled:
				default:
					close(stalled)
					<-wake
				}
			}
			return h(msg)
		}
	}
	repA, repB := &reports{}, &reports{}
	rA, err := router.New[TTxPG](store, &router.Config{DeadLetter: pub, DeadLetterTopic: topic + ".dlq",
		InboxConfig: middleware.InboxConfig{Observer: repA.observe}, Middlewares: []message.HandlerMiddleware{stallOnE5}, Logger: testLogger()})
	require.NoError(t, err)
	require.NoError(t, rA.AddHandler("c1", topic, newSubscriber(t, group, tune), count))
	runA := start(t, rA)
	waitClosed(t, stalled, "member A to enter m5's handler")
	require.Len(t, repA.snapshot(), 4, "A committed through m4")

	rB, err := router.New[TTxPG](store, &router.Config{DeadLetter: pub, DeadLetterTopic: topic + ".dlq",
		InboxConfig: middleware.InboxConfig{Observer: repB.observe}, Logger: testLogger()})
	require.NoError(t, err)
	require.NoError(t, rB.AddHandler("c1", topic, newSubscriber(t, group, tune), count))
	runB := start(t, rB)
	eventually(t, 90*time.Second, "member B to apply m5..m10", func() bool { return len(repB.outcomes("E10")) > 0 })

	// A wakes up inside m5 after the revoke and finishes it.
	close(wake)
	eventually(t, 30*time.Second, "member A to finish m5", func() bool { return len(repA.outcomes("E5")) > 0 })
	require.NoError(t, runA.close(), "A's failed commit after the revoke is not fatal")
	require.NoError(t, runB.close())

	mu.Lock()
	require.Equal(t, []string{"E1", "E2", "E3", "E4", "E5"}, handledByA,
		"handled_after_revoke = 0: m6, m7 (buffered in A's claim) never reached A's handler")
	mu.Unlock()

	applied := map[string]int{}
	duplicates := 0
	for _, rep := range append(repA.snapshot(), repB.snapshot()...) {
		switch rep.Outcome {
		case ackgap.OutcomeApplied:
			applied[rep.EventID]++
		case ackgap.OutcomeDuplicate:
			duplicates++
		}
	}
	for i := 1; i <= 10; i++ {
		require.Equal(t, 1, applied[fmt.Sprintf("E%d", i)], "E%d applied once: %v", i, applied)
	}
	require.Len(t, applied, 10)
	// A stalled before its transaction began, so its m5 is the duplicate
	// of B's (it could not have committed first).
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeDuplicate}, repA.outcomes("E5"))
	require.Equal(t, 1, duplicates, "duplicates_skipped = 1: only A's late m5")

	var n, inboxRows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT n FROM counters WHERE id = 'c'`).Scan(&n))
	require.Equal(t, 10, n, "counter == 10")
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM ackgap_inbox WHERE consumer = 'c1'`).Scan(&inboxRows))
	require.Equal(t, 10, inboxRows, "10 inbox rows")
	assertNothingRedelivered(t, topic, group)
}
