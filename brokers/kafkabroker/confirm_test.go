package kafkabroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

// newAdmin returns a cluster admin on KAFKA_BROKERS, straight to the
// broker; the caller closes it.
func newAdmin(t testing.TB) sarama.ClusterAdmin {
	t.Helper()
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	admin, err := sarama.NewClusterAdmin(kafkaBrokers(t), sc)
	require.NoError(t, err)
	return admin
}

// committedOffset returns group's committed offset for topic/partition
// (-1 when none), read with a client of its own.
func committedOffset(t testing.TB, group, topic string, partition int32) int64 {
	t.Helper()
	admin := newAdmin(t)
	defer admin.Close()
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {partition}})
	require.NoError(t, err)
	block := resp.GetBlock(topic, partition)
	require.NotNil(t, block)
	return block.Offset
}

// receive reads one message from msgs and returns it with its
// ackgap.Delivery and a channel that receives its settlement.
func receive(t testing.TB, msgs <-chan *message.Message) (*message.Message, *ackgap.Delivery, <-chan ackgap.Settlement) {
	t.Helper()
	select {
	case msg := <-msgs:
		d, ok := ackgap.DeliveryFromContext(msg.Context())
		require.True(t, ok, "the subscriber fills ackgap's confirmation hook")
		settled := make(chan ackgap.Settlement, 1)
		require.True(t, d.OnSettled(func(s ackgap.Settlement) { settled <- s }))
		return msg, d, settled
	case <-time.After(60 * time.Second):
		t.Fatal("no message in 60s")
		return nil, nil, nil
	}
}

func settlement(t testing.TB, ch <-chan ackgap.Settlement) ackgap.Settlement {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(30 * time.Second):
		t.Fatal("not settled in 30s")
		return ackgap.Settlement{}
	}
}

// TestConfirmationHook: each message carries an ackgap.Delivery with its
// group, partition and offset. A nack settles it unacked; an ack settles
// it with the time the offset commit returned, and by then the group's
// committed offset covers the message. With interval commits the
// confirmation is the subscriber's next periodic commit, made while the
// subscriber runs (not only at Close).
func TestConfirmationHook(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		interval time.Duration
	}{{"per-ack commits", 0}, {"interval commits", 300 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topic, group := unique("orders"), unique("billing")
			pub := newPublisher(t)
			require.NoError(t, pub.Publish(topic, event(t, "evt-1", "o1")))
			sub := newSubscriber(t, group, func(c *kafkabroker.SubscriberConfig) { c.CommitInterval = tc.interval })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			msgs, err := sub.Subscribe(ctx, topic)
			require.NoError(t, err)

			msg, d, settled := receive(t, msgs)
			require.Equal(t, group, d.ConsumerGroup)
			require.True(t, d.HasOffset)
			require.Equal(t, ackgap.ConfirmationReported, d.Confirmation)
			require.True(t, d.LeaseDeadline.IsZero(), "Kafka has no lease")
			partition, _ := kafkabroker.PartitionFromContext(msg.Context())
			offset, _ := kafkabroker.OffsetFromContext(msg.Context())
			require.Equal(t, partition, d.Partition)
			require.Equal(t, offset, d.Offset)
			nackedAt := time.Now()
			msg.Nack()
			s := settlement(t, settled)
			require.False(t, s.Acked)
			require.NoError(t, s.Err)
			require.True(t, s.Confirmed.IsZero())
			require.False(t, s.At.Before(nackedAt))

			// The same record again, with a Delivery of its own.
			msg, d2, settled := receive(t, msgs)
			require.NotSame(t, d, d2)
			require.Equal(t, offset, d2.Offset)
			ackedAt := time.Now()
			msg.Ack()
			s = settlement(t, settled)
			require.True(t, s.Acked)
			require.NoError(t, s.Err)
			require.False(t, s.At.Before(ackedAt), "ack seen after it happened")
			require.False(t, s.Confirmed.Before(s.At), "confirmed after the ack")
			require.Equal(t, offset+1, committedOffset(t, group, topic, partition), "confirmed means committed")
			t.Logf("%s: ack -> offset commit returned %s", tc.name, s.Confirmed.Sub(s.At))
		})
	}
}
