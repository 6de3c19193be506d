package sqsbroker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/middleware"
)

// TestBatchConsumer runs receive batches of up to ten messages through a
// batch.Processor on PostgreSQL against the local SQS server: eight
// events, a second copy of E1 (another SQS message), and a message
// without an event id, on a queue whose redrive policy allows two
// receives. E3's handler fails once. Every event applies exactly once,
// the acked messages are deleted only after their batch committed, E3
// returns after NackDelay and applies, and the message without an event
// id is nacked until the redrive policy moves it to the dead-letter
// queue.
func TestBatchConsumer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client(t)
	_, dlqURL := createQueue(t, c, "batch-dlq", 30*time.Second, nil)
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, queueArn(t, c, dlqURL))
	name, url := createQueue(t, c, "batch", 30*time.Second, map[string]string{"RedrivePolicy": policy})
	pub := newPublisher(t)
	for i := 1; i <= 8; i++ {
		require.NoError(t, pub.Publish(name, event(fmt.Sprintf("E%d", i))))
	}
	require.NoError(t, pub.Publish(name, event("E1")))
	require.NoError(t, pub.Publish(name, message.NewMessage(watermill.NewUUID(), []byte(`{"no":"event id"}`))))

	b := newPGBackend(t)
	var mu sync.Mutex
	failedE3 := false
	p, err := batch.New(b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"}, Handler: func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		mu.Lock()
		fail := id == "E3" && !failedE3
		failedE3 = failedE3 || fail
		mu.Unlock()
		if err := applyPG(ctx, tx, msg); err != nil {
			return err
		}
		if fail {
			return fmt.Errorf("flaky: %w", ackgap.ErrStoreUnavailable)
		}
		return nil
	}})
	require.NoError(t, err)
	o := &observed{}
	bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, &sqsbroker.SubscriberConfig{
		OptFns: optFns(t), Queue: name, AttemptTimeout: 5 * time.Second, WaitTimeSeconds: 1, Workers: 1,
		AckObserver: o.observeAck,
	}, testLogger())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(ctx) }()
	t.Cleanup(func() { _ = bc.Close() })

	eventually(t, 20*time.Second, "every event applied and the queue empty", func() bool {
		visible, inFlight := queueCounts(t, c, url)
		return len(b.applied(t)) == 8 && visible == 0 && inFlight == 0
	})
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)
	require.NoError(t, bc.Close(), "Close twice is fine")

	want := map[string]int{}
	for i := 1; i <= 8; i++ {
		want[fmt.Sprintf("E%d", i)] = 1
	}
	require.Equal(t, want, b.applied(t), "every event exactly once; the second copy of E1 was a duplicate")
	dlqVisible, _ := queueCounts(t, c, dlqURL)
	require.Equal(t, 1, dlqVisible, "the message without an event id went to the dead-letter queue by the redrive policy")

	outcomes := map[ackgap.SettleOutcome]int{}
	for _, r := range o.ackReports() {
		outcomes[r.Outcome]++
		require.LessOrEqual(t, r.BatchSize, 10)
		if r.Outcome == sqsbroker.AckDeleted {
			require.False(t, r.Confirmed.Before(r.Settled), "deleted after the batch settled (committed)")
		}
	}
	require.Equal(t, 9, outcomes[sqsbroker.AckDeleted], "E1..E8 and E1's copy deleted")
	require.Equal(t, 3, outcomes[sqsbroker.AckNacked], "E3 once, the id-less message twice")
}

// TestBatchConsumerConfig: a missing processor is refused; Close before
// Run returns at once and Run then stops at once.
func TestBatchConsumerConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client(t)
	b := newPGBackend(t)
	p, err := batch.New(b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"}, Handler: func(context.Context, pgx.Tx, *message.Message) error { return nil }})
	require.NoError(t, err)
	_, err = sqsbroker.NewBatchConsumer(ctx, nil, &sqsbroker.SubscriberConfig{}, nil)
	require.ErrorContains(t, err, "invalid config: batch processor is nil")

	name, _ := createQueue(t, c, "batch-close", 30*time.Second, nil)
	bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, &sqsbroker.SubscriberConfig{OptFns: optFns(t), Queue: name, AttemptTimeout: time.Second}, nil)
	require.NoError(t, err)
	require.NoError(t, bc.Close())
	start := time.Now()
	require.NoError(t, bc.Run(ctx))
	require.Less(t, time.Since(start), 15*time.Second, "Run after Close returns without waiting for a long poll (20 s)")
	require.ErrorContains(t, bc.Run(ctx), "called twice")
}
