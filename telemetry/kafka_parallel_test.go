package telemetry_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/telemetry"
)

// TestKafkaParallel: events consumed by kafkabroker's ParallelSubscriber
// reach telemetry through the same ackgap.Delivery hook: each applied span
// is broker-confirmed (by the OffsetCommit the subscriber sent and the
// coordinator accepted) with the full timeline, and the ack gap metric
// counts each once.
func TestKafkaParallel(t *testing.T) {
	brokers := kafkaBrokers(t)
	b := setup(t)
	topic, group := unique("orders"), unique("billing")
	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, watermill.NopLogger{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	sub, err := kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
		Brokers: brokers, ConsumerGroup: group,
		HoldTimeout: 20 * time.Second, SessionTimeout: 2 * time.Second, CloseTimeout: 10 * time.Second,
	}}, watermill.NopLogger{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	runRouter(t, b, sqliteStore(t), telemetry.SystemKafka, topic, sub, pub, apply, nil)

	const n = 20
	ctx, _ := b.producerSpan()
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		msg, err := kafkabroker.NewEvent("evt-"+strconv.Itoa(i), []byte(`{}`))
		require.NoError(t, err)
		b.tel.Inject(ctx, msg)
		msgs = append(msgs, msg)
	}
	require.NoError(t, pub.Publish(topic, msgs...))
	for _, span := range b.ended(t, n) {
		a := attrs(span)
		require.Equal(t, telemetry.OutcomeApplied, a[telemetry.AttrOutcome].AsString(), "%v", a)
		require.Equal(t, telemetry.ConfirmationConfirmed, a[telemetry.AttrBrokerConfirmation].AsString())
		requireTimeline(t, span, telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventCommit,
			telemetry.EventAck, telemetry.EventBrokerConfirmed)
	}
	dps := histogram(t, b.metrics(t), telemetry.MetricAckGap)
	require.Len(t, dps, 1)
	require.Equal(t, uint64(n), dps[0].Count)
}
