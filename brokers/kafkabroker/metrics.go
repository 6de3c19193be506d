package kafkabroker

import (
	"context"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/ackgap/ackgap/internal/enginemetric"
)

// ScopeName is the instrumentation scope of the meter the watermark
// engine ([Subscriber], [ParallelSubscriber], [BatchConsumer]) takes from
// SubscriberConfig.MeterProvider: this package's import path.
const ScopeName = enginemetric.ScopeName

// The watermark engine's instruments: observable, read from
// [ParallelSubscriber.Stats] at each collection, one data point per
// partition the subscriber holds at that moment (a revoked partition stops
// reporting). Attributes of every one: messaging.system ("kafka"),
// messaging.consumer.group.name, messaging.destination.name (the topic)
// and messaging.destination.partition.id (semconv v1.41.0). The partition
// is a metric attribute here, unlike package telemetry's per-message
// metrics: its cardinality is the topic's partition count, and the
// numbers mean nothing summed across partitions.
const (
	// MetricPartitionCommitted (observable gauge, {offset}): the highest
	// offset the group coordinator accepted from this subscriber for the
	// partition ([PartitionStats].Committed); not reported before the
	// first accepted commit.
	MetricPartitionCommitted = enginemetric.Committed
	// MetricPartitionWatermark (observable gauge, {offset}): the lowest
	// offset not yet acked, the offset the subscriber commits next
	// ([PartitionStats].Watermark); not reported before the first record.
	// Watermark minus committed is what a crash now would redeliver of the
	// acked records.
	MetricPartitionWatermark = enginemetric.Watermark
	// MetricPartitionInFlight (observable gauge, {record}): records handed
	// out and not yet acked or nacked ([PartitionStats].InFlight).
	MetricPartitionInFlight = enginemetric.InFlight
	// MetricPartitionBuffered (observable gauge, {record}): records read
	// and not yet below the watermark ([PartitionStats].Buffered), at most
	// MaxBufferedRecords.
	MetricPartitionBuffered = enginemetric.Buffered
	// MetricPartitionLag (observable gauge, {record}): the partition's
	// high watermark as of the last fetch minus the group's committed
	// offset ([PartitionStats].Lag), what kafka-consumer-groups.sh calls
	// lag; not reported before the first fetch answered.
	MetricPartitionLag = enginemetric.Lag
	// MetricPartitionReplaysSkipped (observable counter, {record}):
	// records skipped without a handler call because the committed
	// offset's metadata recorded them finished
	// ([PartitionStats].ReplaysSkipped), over the subscriber's lifetime.
	MetricPartitionReplaysSkipped = enginemetric.ReplaysSkipped
	// MetricPartitionRegressions (observable counter, {regression}): times
	// the group's committed offset was found below one the coordinator
	// had accepted from this subscriber ([ErrOffsetRegressed],
	// [PartitionStats].Regressions), over the subscriber's lifetime.
	MetricPartitionRegressions = enginemetric.Regressions
)

// registerMetrics registers the engine's observable instruments on mp's
// meter, with one callback that reads s.Stats.
func registerMetrics(s *ParallelSubscriber, mp metric.MeterProvider) (metric.Registration, error) {
	meter := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	gauge := func(name, unit, desc string) (metric.Int64ObservableGauge, error) {
		return meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	}
	counter := func(name, unit, desc string) (metric.Int64ObservableCounter, error) {
		return meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	}
	committed, err1 := gauge(MetricPartitionCommitted, "{offset}", "Highest offset the group coordinator accepted from this subscriber for the partition")
	watermark, err2 := gauge(MetricPartitionWatermark, "{offset}", "Lowest offset of the partition not yet acked: the offset committed next")
	inFlight, err3 := gauge(MetricPartitionInFlight, "{record}", "Records of the partition handed out and not yet acked or nacked")
	buffered, err4 := gauge(MetricPartitionBuffered, "{record}", "Records of the partition read and not yet below its watermark")
	lag, err5 := gauge(MetricPartitionLag, "{record}", "Partition high watermark minus the group's committed offset")
	skipped, err6 := counter(MetricPartitionReplaysSkipped, "{record}", "Records skipped without a handler call: recorded finished in the committed offset's metadata")
	regressions, err7 := counter(MetricPartitionRegressions, "{regression}", "Times the group's committed offset was found below one accepted from this subscriber")
	for _, err := range []error{err1, err2, err3, err4, err5, err6, err7} {
		if err != nil {
			return nil, fmt.Errorf("kafkabroker: metrics: %w", err)
		}
	}
	group := semconv.MessagingConsumerGroupName(s.cfg.ConsumerGroup)
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, st := range s.Stats() {
			attrs := metric.WithAttributeSet(attribute.NewSet(
				semconv.MessagingSystemKafka, group,
				semconv.MessagingDestinationName(st.Topic),
				semconv.MessagingDestinationPartitionID(strconv.Itoa(int(st.Partition))),
			))
			if st.Committed >= 0 {
				o.ObserveInt64(committed, st.Committed, attrs)
			}
			if st.Watermark >= 0 {
				o.ObserveInt64(watermark, st.Watermark, attrs)
			}
			if st.Lag >= 0 {
				o.ObserveInt64(lag, st.Lag, attrs)
			}
			o.ObserveInt64(inFlight, int64(st.InFlight), attrs)
			o.ObserveInt64(buffered, int64(st.Buffered), attrs)
			o.ObserveInt64(skipped, st.ReplaysSkipped, attrs)
			o.ObserveInt64(regressions, st.Regressions, attrs)
		}
		return nil
	}, committed, watermark, inFlight, buffered, lag, skipped, regressions)
	if err != nil {
		return nil, fmt.Errorf("kafkabroker: metrics: %w", err)
	}
	return reg, nil
}
