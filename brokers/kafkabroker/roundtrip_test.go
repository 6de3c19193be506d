package kafkabroker_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

// TestRoundTrip publishes 200 events and consumes them through the ackgap
// router and inbox on one group: every event is applied exactly once,
// event id and every other metadata key (traceparent included) arrive
// intact with partition and offset in the context, and every offset is
// committed: after Close the group re-reads nothing.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testRoundTrip(t, sqliteBackend(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testRoundTrip(t, pgBackend(t))
	})
}

type seenMsg struct {
	metadata  message.Metadata
	partition int32
	offset    int64
	hasPO     bool
}

func testRoundTrip[TTx any](t *testing.T, b backend[TTx]) {
	const n = 200
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)

	want := map[string]string{} // event id -> partition key
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		id := fmt.Sprintf("evt-%03d", i)
		key := fmt.Sprintf("order-%02d", i%20)
		want[id] = key
		msgs = append(msgs, event(t, id, key))
	}
	pubStart := time.Now()
	require.NoError(t, pub.Publish(topic, msgs...))
	pubElapsed := time.Since(pubStart)

	var mu sync.Mutex
	seen := map[string]seenMsg{}
	rep := &reports{}
	r, err := router.New(b.store, &router.Config{
		DeadLetter: pub, DeadLetterTopic: topic + ".dlq", InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger(),
	})
	require.NoError(t, err)
	sub := newSubscriber(t, group, nil)
	require.NoError(t, r.AddHandler("billing", topic, sub, func(ctx context.Context, tx TTx, msg *message.Message) error {
		p, okP := kafkabroker.PartitionFromContext(ctx)
		o, okO := kafkabroker.OffsetFromContext(ctx)
		mu.Lock()
		seen[msg.Metadata.Get(ackgap.MetadataEventIDKey)] = seenMsg{metadata: maps.Clone(msg.Metadata), partition: p, offset: o, hasPO: okP && okO}
		mu.Unlock()
		return b.apply(ctx, tx, msg.Metadata.Get(ackgap.MetadataEventIDKey))
	}))
	runStart := time.Now()
	rn := start(t, r)
	eventually(t, 60*time.Second, "200 events applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	require.NoError(t, rn.close())

	// Throughput: first delivery into the inbox to the last commit.
	all := rep.snapshot()
	first, last := all[0].Received, all[0].Committed
	for _, r := range all {
		if r.Received.Before(first) {
			first = r.Received
		}
		if r.Committed.After(last) {
			last = r.Committed
		}
	}
	consume := last.Sub(first)
	t.Logf("publish: %d events in %s (%.0f msgs/s, synchronous, acks=all); consume: %s from first delivery to last commit (%.0f msgs/s), %s including group join",
		n, pubElapsed.Round(time.Millisecond), float64(n)/pubElapsed.Seconds(),
		consume.Round(time.Millisecond), float64(n)/consume.Seconds(), last.Sub(runStart).Round(time.Millisecond))

	applied := b.applied(t)
	require.Len(t, applied, n)
	for id := range want {
		require.Equal(t, 1, applied[id], "event %s applied %d times", id, applied[id])
	}
	require.Equal(t, n, rep.count(ackgap.OutcomeApplied))
	require.Equal(t, 0, rep.count(ackgap.OutcomeDuplicate))

	// Metadata end to end, and one partition per partition key.
	partitionOf := map[string]int32{}
	for id, key := range want {
		s := seen[id]
		require.True(t, s.hasPO, "partition/offset missing from the context of %s", id)
		require.Equal(t, id, s.metadata.Get(ackgap.MetadataEventIDKey))
		require.Equal(t, key, s.metadata.Get(kafkabroker.MetadataPartitionKey))
		require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", s.metadata.Get("traceparent"))
		require.Equal(t, "acme", s.metadata.Get("tenant"))
		if p, ok := partitionOf[key]; ok {
			require.Equal(t, p, s.partition, "partition key %s spread over partitions", key)
		}
		partitionOf[key] = s.partition
	}

	assertNothingRedelivered(t, topic, group)
}

// TestRedelivery: a handler that fails once (not permanently) is tried
// again and applied exactly once; the failed attempt's transaction, inbox
// row included, was rolled back. In place: the router's retry. Through
// the broker: with MaxAttempts 1 and an error the router does not
// dead-letter (ackgap.ErrStoreUnavailable), the message is nacked and
// watermill-kafka hands the same record out again.
func TestRedelivery(t *testing.T) {
	t.Parallel()
	t.Run("retry in place/sqlite", func(t *testing.T) {
		t.Parallel()
		testRedelivery(t, sqliteBackend(t), 3, errFlaky)
	})
	t.Run("nack through the broker/postgres", func(t *testing.T) {
		t.Parallel()
		testRedelivery(t, pgBackend(t), 1, fmt.Errorf("%w: connection reset", ackgap.ErrStoreUnavailable))
	})
}

func testRedelivery[TTx any](t *testing.T, b backend[TTx], maxAttempts int, failWith error) {
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)
	require.NoError(t, pub.Publish(topic, event(t, "evt-flaky", "order-1"), event(t, "evt-next", "order-1")))

	rep := &reports{}
	r, err := router.New(b.store, &router.Config{
		DeadLetter: pub, DeadLetterTopic: topic + ".dlq", InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger(),
		MaxAttempts: maxAttempts, RetryInitialInterval: 10 * time.Millisecond, RetryMaxInterval: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	var mu sync.Mutex
	calls := map[string]int{}
	offsets := map[string][]int64{}
	require.NoError(t, r.AddHandler("billing", topic, newSubscriber(t, group, nil), func(ctx context.Context, tx TTx, msg *message.Message) error {
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		o, _ := kafkabroker.OffsetFromContext(ctx)
		if err := b.apply(ctx, tx, id); err != nil {
			return err
		}
		mu.Lock()
		calls[id]++
		offsets[id] = append(offsets[id], o)
		first := calls[id] == 1
		mu.Unlock()
		if id == "evt-flaky" && first {
			return failWith // after the write: the rollback must undo it
		}
		return nil
	}))
	rn := start(t, r)
	eventually(t, 60*time.Second, "both events applied", func() bool { return rep.count(ackgap.OutcomeApplied) == 2 })
	require.NoError(t, rn.close())

	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed, ackgap.OutcomeApplied}, rep.outcomes("evt-flaky"))
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, rep.outcomes("evt-next"))
	require.Equal(t, map[string]int{"evt-flaky": 1, "evt-next": 1}, b.applied(t))
	mu.Lock()
	require.Len(t, offsets["evt-flaky"], 2)
	require.Equal(t, offsets["evt-flaky"][0], offsets["evt-flaky"][1], "the second attempt is the same record")
	mu.Unlock()
	require.Zero(t, topicSize(t, topic+".dlq"), "a transient failure is never dead-lettered")
	assertNothingRedelivered(t, topic, group)
}
