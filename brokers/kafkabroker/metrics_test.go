package kafkabroker_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

// enginePoint is one partition's data point of the engine's instruments.
type enginePoint struct {
	attrs attribute.Set
	value int64
}

// engineMetrics collects reader and returns kafkabroker's instruments'
// data points per instrument name, keyed by "group/topic/partition".
func engineMetrics(t testing.TB, reader *sdkmetric.ManualReader) map[string]map[string]enginePoint {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]map[string]enginePoint{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != kafkabroker.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			var points []metricdata.DataPoint[int64]
			switch data := m.Data.(type) {
			case metricdata.Gauge[int64]:
				points = data.DataPoints
			case metricdata.Sum[int64]:
				require.True(t, data.IsMonotonic, "%s is a counter", m.Name)
				points = data.DataPoints
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			for _, dp := range points {
				g, _ := dp.Attributes.Value(semconv.MessagingConsumerGroupNameKey)
				topic, _ := dp.Attributes.Value(semconv.MessagingDestinationNameKey)
				p, _ := dp.Attributes.Value(semconv.MessagingDestinationPartitionIDKey)
				if out[m.Name] == nil {
					out[m.Name] = map[string]enginePoint{}
				}
				out[m.Name][g.AsString()+"/"+topic.AsString()+"/"+p.AsString()] = enginePoint{dp.Attributes, dp.Value}
			}
		}
	}
	return out
}

// TestEngineMetrics: with a MeterProvider the watermark engine publishes
// each held partition's numbers; after N records were consumed and acked
// the partition's committed offset and watermark are both N, nothing is
// in flight or buffered, the lag is 0 and nothing was skipped or
// regressed. Partitions without a record report no offsets. After Close
// the subscriber reports nothing. The default Subscriber and the
// ParallelSubscriber run the same engine and the same instruments.
func TestEngineMetrics(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"subscriber", "parallel"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const n = 30
			topic, group := unique("orders"), unique("billing")
			msgs := make([]*message.Message, 0, n)
			for i := range n {
				msgs = append(msgs, event(t, fmt.Sprintf("evt-%03d", i), fmt.Sprintf("k-%d", i)))
			}
			produce(t, topic, 0, msgs)

			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })

			var (
				out     <-chan *message.Message
				stats   func() []kafkabroker.PartitionStats
				closeFn func() error
			)
			switch kind {
			case "subscriber":
				sub := newSubscriber(t, group, func(c *kafkabroker.SubscriberConfig) { c.MeterProvider = mp })
				var err error
				out, err = sub.Subscribe(context.Background(), topic)
				require.NoError(t, err)
				stats, closeFn = sub.Stats, sub.Close
			case "parallel":
				sub := newParallel(t, group, func(c *kafkabroker.ParallelConfig) { c.MeterProvider = mp })
				var err error
				out, err = sub.Subscribe(context.Background(), topic)
				require.NoError(t, err)
				stats, closeFn = sub.Stats, sub.Close
			}
			for range n {
				select {
				case msg := <-out:
					msg.Ack()
				case <-time.After(time.Minute):
					t.Fatal("no message in 1 min")
				}
			}
			eventually(t, time.Minute, "partition 0 committed at the end", func() bool {
				for _, st := range stats() {
					if st.Partition == 0 {
						return st.Committed == n && st.Lag == 0
					}
				}
				return false
			})

			got := engineMetrics(t, reader)
			p0 := group + "/" + topic + "/0"
			want := map[string]int64{
				kafkabroker.MetricPartitionCommitted:      n,
				kafkabroker.MetricPartitionWatermark:      n,
				kafkabroker.MetricPartitionInFlight:       0,
				kafkabroker.MetricPartitionBuffered:       0,
				kafkabroker.MetricPartitionLag:            0,
				kafkabroker.MetricPartitionReplaysSkipped: 0,
				kafkabroker.MetricPartitionRegressions:    0,
			}
			for name, v := range want {
				pt, ok := got[name][p0]
				require.True(t, ok, "%s reported for partition 0", name)
				require.Equal(t, v, pt.value, name)
				sys, _ := pt.attrs.Value(semconv.MessagingSystemKey)
				require.Equal(t, "kafka", sys.AsString(), name)
			}
			// The other partitions of the topic have no record: held
			// (reported in flight 0), but no offset to report.
			for _, st := range stats() {
				if st.Partition == 0 {
					continue
				}
				key := group + "/" + topic + "/" + strconv.Itoa(int(st.Partition))
				require.Contains(t, got[kafkabroker.MetricPartitionInFlight], key)
				require.NotContains(t, got[kafkabroker.MetricPartitionWatermark], key, "no watermark before the first record")
				require.NotContains(t, got[kafkabroker.MetricPartitionCommitted], key, "nothing committed")
			}

			require.NoError(t, closeFn())
			for name, points := range engineMetrics(t, reader) {
				require.Empty(t, points, "%s reported after Close", name)
			}
		})
	}
}

// TestLagOf: lag is the high watermark minus the group's committed offset
// (the subscriber's accepted commit, else the claim's start), unknown
// without an offset or before the first fetch.
func TestLagOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ hwm, committed, initial, want int64 }{
		{hwm: 10, committed: 4, initial: 0, want: 6},
		{hwm: 10, committed: -1, initial: 3, want: 7}, // before the first commit
		{hwm: 10, committed: 10, initial: 3, want: 0},
		{hwm: 10, committed: -1, initial: -2, want: -1}, // no committed offset (OffsetOldest)
		{hwm: 0, committed: -1, initial: 0, want: 0},    // an empty partition
		{hwm: 0, committed: 5, initial: 5, want: -1},    // no fetch answered yet
	} {
		require.Equal(t, tc.want, kafkabroker.LagOf(tc.hwm, tc.committed, tc.initial), "%+v", tc)
	}
}

// TestEngineMetricsHeldRecord: every instrument reports its own number.
// With the first of n records held (not acked) and the rest acked, the
// partition reports committed 0 and watermark 0 (the held record), 1 in
// flight, n buffered and a lag of n. A second subscriber of the group on
// the same provider, after the first stopped, skips the n-1 records the
// commit recorded finished (replays skipped n-1), gets only the held one,
// and once it is acked reports committed = watermark = n, lag 0; no
// regression either time.
func TestEngineMetricsHeldRecord(t *testing.T) {
	t.Parallel()
	const n = 12
	topic, group := unique("orders"), unique("billing")
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		msgs = append(msgs, event(t, fmt.Sprintf("evt-%03d", i), fmt.Sprintf("k-%d", i)))
	}
	produce(t, topic, 0, msgs)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tune := func(c *kafkabroker.ParallelConfig) {
		c.MeterProvider = mp
		c.Ordering = kafkabroker.OrderingUnordered
		c.MaxInFlight = n
		c.CloseTimeout = 500 * time.Millisecond
	}
	p0 := group + "/" + topic + "/0"
	partition0 := func(stats []kafkabroker.PartitionStats) kafkabroker.PartitionStats {
		for _, st := range stats {
			if st.Partition == 0 {
				return st
			}
		}
		return kafkabroker.PartitionStats{Partition: -1}
	}
	requireMetrics := func(want map[string]int64) {
		t.Helper()
		got := engineMetrics(t, reader)
		for name, v := range want {
			pt, ok := got[name][p0]
			require.True(t, ok, "%s reported for partition 0", name)
			require.Equal(t, v, pt.value, name)
		}
	}

	first := newParallel(t, group, tune)
	out, err := first.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	for range n {
		select {
		case msg := <-out:
			d, ok := ackgap.DeliveryFromContext(msg.Context())
			require.True(t, ok)
			if d.Offset != 0 {
				msg.Ack()
			}
		case <-time.After(time.Minute):
			t.Fatal("no message in 1 min")
		}
	}
	eventually(t, time.Minute, "the acks settled and the held watermark committed", func() bool {
		st := partition0(first.Stats())
		return st.InFlight == 1 && st.Committed == 0 && st.Lag == n
	})
	requireMetrics(map[string]int64{
		kafkabroker.MetricPartitionCommitted:      0,
		kafkabroker.MetricPartitionWatermark:      0,
		kafkabroker.MetricPartitionInFlight:       1,
		kafkabroker.MetricPartitionBuffered:       n,
		kafkabroker.MetricPartitionLag:            n,
		kafkabroker.MetricPartitionReplaysSkipped: 0,
		kafkabroker.MetricPartitionRegressions:    0,
	})
	require.NoError(t, first.Close(), "the held record is cancelled after CloseTimeout")

	second := newParallel(t, group, tune)
	out, err = second.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	select {
	case msg := <-out:
		d, ok := ackgap.DeliveryFromContext(msg.Context())
		require.True(t, ok)
		require.Equal(t, int64(0), d.Offset, "only the held record comes again")
		msg.Ack()
	case <-time.After(time.Minute):
		t.Fatal("no message in 1 min")
	}
	eventually(t, time.Minute, "partition 0 committed at the end", func() bool {
		st := partition0(second.Stats())
		return st.Committed == n && st.Lag == 0
	})
	requireMetrics(map[string]int64{
		kafkabroker.MetricPartitionCommitted:      n,
		kafkabroker.MetricPartitionWatermark:      n,
		kafkabroker.MetricPartitionInFlight:       0,
		kafkabroker.MetricPartitionBuffered:       0,
		kafkabroker.MetricPartitionLag:            0,
		kafkabroker.MetricPartitionReplaysSkipped: n - 1,
		kafkabroker.MetricPartitionRegressions:    0,
	})
	select {
	case msg := <-out:
		t.Fatalf("record %s handed out again: it was recorded finished", msg.UUID)
	default:
	}
	require.NoError(t, second.Close())
}
