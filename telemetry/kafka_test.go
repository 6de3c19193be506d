package telemetry_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/telemetry"
)

// kafkaBrokers returns KAFKA_BROKERS (default 127.0.0.1:9092, where
// tools/brokers.sh start runs kfake), failing the test when the first one
// does not accept TCP: these tests need a real broker and never skip.
func kafkaBrokers(t testing.TB) []string {
	t.Helper()
	env := os.Getenv("KAFKA_BROKERS")
	if env == "" {
		env = "127.0.0.1:9092"
	}
	brokers := strings.Split(env, ",")
	c, err := net.DialTimeout("tcp", brokers[0], 2*time.Second)
	if err != nil {
		t.Fatalf("Kafka broker %s (KAFKA_BROKERS) is unreachable: %v\n\tstart it with: tools/brokers.sh install && tools/brokers.sh start", brokers[0], err)
	}
	_ = c.Close()
	return brokers
}

func unique(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "." + hex.EncodeToString(b)
}

// TestKafka runs events through the Kafka adapter and a router with
// telemetry, with per-ack (synchronous) and interval commits. Every
// applied span has received <= handler_start <= commit <= ack <=
// broker_confirmed, where broker_confirmed is the return of the offset
// commit that carried the message; the ack gap metric adds up the span's
// commit -> broker_confirmed times. A redelivered copy is a duplicate
// without a commit. The figures are logged, not asserted: the interval's
// ack gap reflects the interval, the synchronous one a commit round trip.
func TestKafka(t *testing.T) {
	brokers := kafkaBrokers(t)
	for _, tc := range []struct {
		name      string
		interval  time.Duration
		fetchWait time.Duration // 0: the adapter's default
	}{
		{"sync commits", 0, 0},
		// A commit shares the broker connection with the fetch long-poll
		// (FetchMaxWaitIntervalDefault, 500 ms, with interval commits), so
		// it can wait behind one: the ack gap shows it.
		{"interval commits 250ms", 250 * time.Millisecond, 0},
		{"interval commits 250ms, fetch wait 10ms", 250 * time.Millisecond, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			topic, group := unique("orders"), unique("billing")
			pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, watermill.NopLogger{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = pub.Close() })
			sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{
				Brokers: brokers, ConsumerGroup: group, CommitInterval: tc.interval, FetchMaxWait: tc.fetchWait,
				HoldTimeout: 20 * time.Second, SessionTimeout: 2 * time.Second, CloseTimeout: 10 * time.Second,
			}, watermill.NopLogger{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = sub.Close() })
			runRouter(t, b, sqliteStore(t), telemetry.SystemKafka, topic, sub, pub, apply, nil)

			const n = 20
			ctx, producer := b.producerSpan()
			event := func(i int) *message.Message {
				msg, err := kafkabroker.NewEvent("evt-"+strconv.Itoa(i), []byte(`{}`))
				require.NoError(t, err)
				b.tel.Inject(ctx, msg)
				return msg
			}
			for i := range n {
				// One at a time, as a producer would: each ack gap is its own.
				require.NoError(t, pub.Publish(topic, event(i)))
			}
			spans := b.ended(t, n)

			var gaps, confirms []time.Duration
			var gapSum float64
			for _, span := range spans {
				a := attrs(span)
				require.Equal(t, "process "+topic, span.Name())
				require.Equal(t, telemetry.OutcomeApplied, a[telemetry.AttrOutcome].AsString(), "%v", a)
				require.NotEqual(t, codes.Error, span.Status().Code)
				require.Equal(t, "kafka", a["messaging.system"].AsString())
				require.Equal(t, topic, a["messaging.destination.name"].AsString())
				require.Equal(t, group, a["messaging.consumer.group.name"].AsString())
				require.Contains(t, a, attribute.Key("messaging.destination.partition.id"))
				require.Contains(t, a, attribute.Key("messaging.kafka.offset"))
				require.Equal(t, telemetry.ConfirmationConfirmed, a[telemetry.AttrBrokerConfirmation].AsString())
				require.Len(t, span.Links(), 1)
				require.Equal(t, producer.SpanID(), span.Links()[0].SpanContext.SpanID())
				requireTimeline(t, span, telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventCommit,
					telemetry.EventAck, telemetry.EventBrokerConfirmed)
				_, at := events(span)
				gap := at[telemetry.EventBrokerConfirmed].Sub(at[telemetry.EventCommit])
				require.InDelta(t, gap.Seconds(), a[telemetry.AttrAckGap].AsFloat64(), 1e-9)
				gaps = append(gaps, gap)
				confirms = append(confirms, at[telemetry.EventBrokerConfirmed].Sub(at[telemetry.EventAck]))
				gapSum += gap.Seconds()
			}
			ms := b.metrics(t)
			dps := histogram(t, ms, telemetry.MetricAckGap)
			require.Len(t, dps, 1)
			require.Equal(t, uint64(n), dps[0].Count)
			require.InDelta(t, gapSum, dps[0].Sum, 1e-6, "metric and spans agree")
			v, _ := dps[0].Attributes.Value("messaging.consumer.group.name")
			require.Equal(t, group, v.AsString())
			noHighCardinality(t, ms)
			p50, pmax := percentiles(gaps)
			c50, cmax := percentiles(confirms)
			t.Logf("Kafka %s: ack gap (commit -> offset commit returned) p50 %s max %s; ack -> confirmed p50 %s max %s; %d messages",
				tc.name, p50, pmax, c50, cmax, n)

			// A copy of an applied event (a producer retry): duplicate, no
			// commit, still acked and confirmed.
			require.NoError(t, pub.Publish(topic, event(0)))
			dup := b.ended(t, n+1)[n]
			require.Equal(t, telemetry.OutcomeDuplicate, attrs(dup)[telemetry.AttrOutcome].AsString())
			names, _ := events(dup)
			require.NotContains(t, names, telemetry.EventCommit, fmt.Sprint(names))
			requireTimeline(t, dup, telemetry.EventReceived, telemetry.EventAck, telemetry.EventBrokerConfirmed)
			require.Equal(t, int64(1), counter(t, b.metrics(t), telemetry.MetricDuplicatesSkipped, "", ""))
		})
	}
}

// TestKafkaFailedNotAcked: a handler failing with an error the router
// does not dead-letter is nacked: status Error, no ack and no
// confirmation; watermill-kafka resends it and the next attempt applies.
func TestKafkaFailedNotAcked(t *testing.T) {
	brokers := kafkaBrokers(t)
	b := setup(t)
	topic, group := unique("orders"), unique("billing")
	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, watermill.NopLogger{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{
		Brokers: brokers, ConsumerGroup: group,
		HoldTimeout: 20 * time.Second, SessionTimeout: 2 * time.Second, CloseTimeout: 10 * time.Second,
	}, watermill.NopLogger{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	var first once
	runRouter(t, b, sqliteStore(t), telemetry.SystemKafka, topic, sub, pub, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		if first.first(msg.Metadata.Get("event_id")) {
			return context.Canceled // shutdown-like: nacked, never dead-lettered
		}
		return apply(ctx, tx, msg)
	}, nil)
	msg, err := kafkabroker.NewEvent("evt-1", []byte(`{}`))
	require.NoError(t, err)
	require.NoError(t, pub.Publish(topic, msg))
	spans := b.ended(t, 2)
	failed := spans[0]
	require.Equal(t, codes.Error, failed.Status().Code)
	require.Equal(t, "canceled", attrs(failed)["error.type"].AsString())
	names, _ := events(failed)
	require.NotContains(t, names, telemetry.EventAck)
	require.NotContains(t, names, telemetry.EventBrokerConfirmed)
	requireTimeline(t, failed, telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventNack)
	require.Equal(t, attrs(failed)["messaging.kafka.offset"], attrs(spans[1])["messaging.kafka.offset"], "the same record again")
	requireTimeline(t, spans[1], telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventCommit,
		telemetry.EventAck, telemetry.EventBrokerConfirmed)
}
