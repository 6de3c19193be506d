package console

import (
	"context"
	"fmt"
	"slices"
	"sync"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

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

// snapshot is one reading of the Recorder.
type snapshot struct {
	Brokers   []*brokerLive
	Consumers map[string]consumerCounts
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
