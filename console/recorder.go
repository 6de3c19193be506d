package console

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/ackgap/ackgap/internal/enginemetric"
	"github.com/ackgap/ackgap/telemetry"
)

// Recorder keeps this process's ackgap measurements for the console's live
// page: an OpenTelemetry metric reader that the application adds to the
// MeterProvider it gives package telemetry:
//
//	rec := console.NewRecorder()
//	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rec.Reader()))
//	tel, err := telemetry.New(&telemetry.Config{MeterProvider: mp})
//
// Give the same provider to the Kafka subscribers
// (kafkabroker.SubscriberConfig.MeterProvider) and the live page also
// shows their partitions: committed offset, watermark, in flight,
// buffered, lag, replays skipped and regressions.
//
// It costs next to nothing while nobody looks: the SDK adds each
// measurement to the instrument's fixed buckets (telemetry's bucket
// boundaries), about 70 ns per measurement on a 2-core test machine
// (BenchmarkRecorderRecord), and the Recorder reads them only when a page
// is rendered. Counts are cumulative
// since the process started. A Recorder serves one MeterProvider; it is
// safe for concurrent use.
type Recorder struct {
	reader *sdkmetric.ManualReader
	mu     sync.Mutex
}

// NewRecorder returns a Recorder; register [Recorder.Reader] with a
// MeterProvider.
func NewRecorder() *Recorder {
	return &Recorder{reader: sdkmetric.NewManualReader()}
}

// Reader returns the metric reader to pass to sdkmetric.WithReader. It
// must be registered with exactly one MeterProvider.
func (r *Recorder) Reader() sdkmetric.Reader { return r.reader }

// histogram is one instrument's buckets for one broker.
type histogram struct {
	Bounds []float64 // upper bounds, seconds; the last bucket is unbounded
	Counts []uint64  // len(Bounds)+1
	Count  uint64
	Sum    float64
}

// brokerLive is what the live page shows for one broker (messaging.system
// and destination).
type brokerLive struct {
	System, Destination string
	AckGap, Headroom    *histogram
}

// consumerCounts are the counters of one consumer since the process
// started.
type consumerCounts struct {
	Duplicates, DeadLettered uint64
}

// partitionLive is one Kafka partition held by a watermark-engine
// subscriber of this process (kafkabroker's ackgap.kafka.partition.*
// instruments); a value is -1 when the instrument reported none (no
// record yet, nothing committed yet, lag unknown).
type partitionLive struct {
	Group, Topic string
	Partition    int64
	Committed    int64
	Watermark    int64
	InFlight     int64
	Buffered     int64
	Lag          int64
	Skipped      int64
	Regressions  int64
}

// snapshot is one reading of the Recorder.
type snapshot struct {
	Brokers   []*brokerLive
	Consumers map[string]consumerCounts
	// Partitions are the Kafka engine's partitions, ordered by group,
	// topic and partition; none when no kafkabroker subscriber publishes
	// on the Recorder's MeterProvider.
	Partitions []*partitionLive
}

// snapshot reads the measurements so far.
func (r *Recorder) snapshot(ctx context.Context) (*snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(ctx, &rm); err != nil {
		return nil, fmt.Errorf("console: read metrics: %w", err)
	}
	s := &snapshot{Consumers: map[string]consumerCounts{}}
	brokers := map[[2]string]*brokerLive{}
	broker := func(system, dest string) *brokerLive {
		k := [2]string{system, dest}
		b := brokers[k]
		if b == nil {
			b = &brokerLive{System: system, Destination: dest}
			brokers[k] = b
			s.Brokers = append(s.Brokers, b)
		}
		return b
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name == enginemetric.ScopeName {
			s.Partitions = append(s.Partitions, enginePartitions(sm.Metrics)...)
			continue
		}
		if sm.Scope.Name != telemetry.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			switch m.Name {
			case telemetry.MetricAckGap, telemetry.MetricLeaseHeadroom:
				data, ok := m.Data.(metricdata.Histogram[float64])
				if !ok {
					continue
				}
				for _, dp := range data.DataPoints {
					sys, _ := dp.Attributes.Value(semconv.MessagingSystemKey)
					dest, _ := dp.Attributes.Value(semconv.MessagingDestinationNameKey)
					b := broker(sys.AsString(), dest.AsString())
					target := &b.AckGap
					if m.Name == telemetry.MetricLeaseHeadroom {
						target = &b.Headroom
					}
					if *target == nil {
						*target = &histogram{Bounds: dp.Bounds, Counts: make([]uint64, len(dp.BucketCounts))}
					}
					(*target).add(dp)
				}
			case telemetry.MetricDuplicatesSkipped, telemetry.MetricOutcomes:
				data, ok := m.Data.(metricdata.Sum[int64])
				if !ok {
					continue
				}
				for _, dp := range data.DataPoints {
					c, _ := dp.Attributes.Value(telemetry.AttrConsumer)
					counts := s.Consumers[c.AsString()]
					if m.Name == telemetry.MetricDuplicatesSkipped {
						counts.Duplicates += uint64(dp.Value)
					} else if o, _ := dp.Attributes.Value(telemetry.AttrOutcome); o.AsString() == telemetry.OutcomeDeadLettered {
						counts.DeadLettered += uint64(dp.Value)
					} else {
						continue
					}
					s.Consumers[c.AsString()] = counts
				}
			}
		}
	}
	slices.SortFunc(s.Brokers, func(a, b *brokerLive) int {
		if a.System != b.System {
			if a.System < b.System {
				return -1
			}
			return 1
		}
		if a.Destination < b.Destination {
			return -1
		}
		if a.Destination > b.Destination {
			return 1
		}
		return 0
	})
	return s, nil
}

// add adds a data point with the same bounds (telemetry uses one set per
// instrument); a point with other bounds (a View changed them) is counted
// in Count and Sum only.
func (h *histogram) add(dp metricdata.HistogramDataPoint[float64]) {
	h.Count += dp.Count
	h.Sum += dp.Sum
	if !slices.Equal(h.Bounds, dp.Bounds) || len(dp.BucketCounts) != len(h.Counts) {
		return
	}
	for i, c := range dp.BucketCounts {
		h.Counts[i] += c
	}
}

// negative returns the count in buckets whose upper bound is at most 0:
// lease headroom that ran out (the bucket ending at 0 counts, as a
// confirmation exactly at the deadline is already too late for SQS).
func (h *histogram) negative() uint64 {
	var n uint64
	for i, b := range h.Bounds {
		if b <= 0 {
			n += h.Counts[i]
		}
	}
	return n
}

// enginePartitions returns the partitions the Kafka engine's instruments
// report, ordered by group, topic and partition.
func enginePartitions(metrics []metricdata.Metrics) []*partitionLive {
	type key struct {
		group, topic string
		partition    int64
	}
	parts := map[key]*partitionLive{}
	for _, m := range metrics {
		var points []metricdata.DataPoint[int64]
		switch data := m.Data.(type) {
		case metricdata.Gauge[int64]:
			points = data.DataPoints
		case metricdata.Sum[int64]:
			points = data.DataPoints
		default:
			continue
		}
		for _, dp := range points {
			g, _ := dp.Attributes.Value(semconv.MessagingConsumerGroupNameKey)
			t, _ := dp.Attributes.Value(semconv.MessagingDestinationNameKey)
			pv, _ := dp.Attributes.Value(semconv.MessagingDestinationPartitionIDKey)
			n, err := strconv.ParseInt(pv.AsString(), 10, 32)
			if err != nil {
				continue
			}
			k := key{g.AsString(), t.AsString(), n}
			p := parts[k]
			if p == nil {
				p = &partitionLive{Group: k.group, Topic: k.topic, Partition: n,
					Committed: -1, Watermark: -1, InFlight: -1, Buffered: -1, Lag: -1, Skipped: -1, Regressions: -1}
				parts[k] = p
			}
			switch m.Name {
			case enginemetric.Committed:
				p.Committed = dp.Value
			case enginemetric.Watermark:
				p.Watermark = dp.Value
			case enginemetric.InFlight:
				p.InFlight = dp.Value
			case enginemetric.Buffered:
				p.Buffered = dp.Value
			case enginemetric.Lag:
				p.Lag = dp.Value
			case enginemetric.ReplaysSkipped:
				p.Skipped = dp.Value
			case enginemetric.Regressions:
				p.Regressions = dp.Value
			}
		}
	}
	out := slices.Collect(maps.Values(parts))
	slices.SortFunc(out, func(a, b *partitionLive) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
