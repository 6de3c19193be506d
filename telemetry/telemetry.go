package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter: this
// package's import path (OpenTelemetry's convention for instrumentation
// libraries).
const ScopeName = "github.com/ackgap/ackgap/telemetry"

// Values of messaging.system (semconv v1.41.0, attribute
// messaging.system). Kafka and SQS are the registered values; GoChannel
// has none, so ackgap uses its own.
const (
	SystemKafka     = "kafka"     // semconv.MessagingSystemKafka
	SystemAWSSQS    = "aws_sqs"   // semconv.MessagingSystemAWSSQS
	SystemGoChannel = "gochannel" // not registered in semconv
)

// Config configures [New]. The zero value (or nil) uses the OpenTelemetry
// globals, which do nothing until the application installs an SDK.
type Config struct {
	// TracerProvider makes the tracer (scope [ScopeName]). Default
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the meter (scope [ScopeName]). Default
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator extracts the producer's trace context from message
	// metadata (and [Telemetry.Inject] writes it). Default
	// otel.GetTextMapPropagator(), which is a no-op until the application
	// sets one: set propagation.TraceContext{} (W3C traceparent) here or
	// globally to get links to producer spans.
	Propagator propagation.TextMapPropagator
	// OutboxStats, when set, is called at each metric collection to report
	// the outbox gauges ackgap.outbox.backlog and
	// ackgap.outbox.oldest_pending_age. It runs on the reader's goroutine;
	// an error skips that collection's observations. Default nil: no
	// gauges.
	OutboxStats OutboxStatsFunc
}

// OutboxStats is what an [OutboxStatsFunc] reports about an outbox.
type OutboxStats struct {
	// Pending is the number of outbox rows not yet published or delivered
	// (gauge ackgap.outbox.backlog, unit {row}).
	Pending int64
	// OldestPendingAge is how long the oldest pending row has waited, 0
	// when none is pending (gauge ackgap.outbox.oldest_pending_age, unit
	// s).
	OldestPendingAge time.Duration
}

// OutboxStatsFunc reads the outbox's backlog, typically with one query
// (count and min(created_at) of the pending rows). It must honour ctx.
type OutboxStatsFunc func(ctx context.Context) (OutboxStats, error)

// Telemetry makes ackgap's spans and metrics. Build it once per process
// with [New]; it is safe for concurrent use. Close it when the routers
// using it have stopped.
type Telemetry struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator

	processDuration metric.Float64Histogram
	ackGap          metric.Float64Histogram
	leaseHeadroom   metric.Float64Histogram
	outcomes        metric.Int64Counter
	duplicates      metric.Int64Counter
	unconfirmed     metric.Int64Counter
	registration    metric.Registration

	attrs attrCache

	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Bucket boundaries, in seconds. Durations follow semconv's advice for
// messaging.process.duration; the ack gap reaches further (interval
// commits, slow deletes); lease headroom is signed and spans the longest
// SQS visibility timeout (12 h).
var (
	durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	ackGapBuckets   = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	headroomBuckets = []float64{-300, -60, -10, -1, 0, 1, 5, 10, 30, 60, 120, 300, 900, 3600, 43200}
)

// New returns a Telemetry that records through cfg's providers (nil means
// all defaults: the OpenTelemetry globals). It creates the instruments
// listed in the package doc; it returns an error if the meter refuses one
// or the outbox callback cannot be registered.
func New(cfg *Config) (*Telemetry, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
	if c.MeterProvider == nil {
		c.MeterProvider = otel.GetMeterProvider()
	}
	if c.Propagator == nil {
		c.Propagator = otel.GetTextMapPropagator()
	}
	t := &Telemetry{
		tracer:     c.TracerProvider.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		propagator: c.Propagator,
		closing:    make(chan struct{}),
	}
	meter := c.MeterProvider.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	var errs []error
	hist := func(name, desc string, buckets []float64) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	count := func(name, desc string) metric.Int64Counter {
		n, err := meter.Int64Counter(name, metric.WithUnit("{message}"), metric.WithDescription(desc))
		errs = append(errs, err)
		return n
	}
	t.processDuration = hist(MetricProcessDuration, "Duration of processing operation.", durationBuckets)
	t.ackGap = hist(MetricAckGap, "Time from the inbox commit to the broker's confirmation of the ack (to the ack when the adapter cannot observe the confirmation).", ackGapBuckets)
	t.leaseHeadroom = hist(MetricLeaseHeadroom, "Lease deadline minus the broker's confirmation of the ack; negative: the message was visible again before it was confirmed.", headroomBuckets)
	t.outcomes = count(MetricOutcomes, "Deliveries processed, by ackgap outcome.")
	t.duplicates = count(MetricDuplicatesSkipped, "Deliveries the inbox found already processed and acked without running the handler.")
	t.unconfirmed = count(MetricAcksUnconfirmed, "Acks the broker did not confirm (the message will be delivered again).")
	if c.OutboxStats != nil {
		backlog, err := meter.Int64ObservableGauge(MetricOutboxBacklog, metric.WithUnit("{row}"),
			metric.WithDescription("Outbox rows not yet published or delivered."))
		errs = append(errs, err)
		age, err := meter.Float64ObservableGauge(MetricOutboxOldestPendingAge, metric.WithUnit("s"),
			metric.WithDescription("Age of the oldest pending outbox row; 0 when none is pending."))
		errs = append(errs, err)
		if err := errors.Join(errs...); err == nil {
			stats := c.OutboxStats
			t.registration, err = meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
				s, err := stats(ctx)
				if err != nil {
					return fmt.Errorf("telemetry: outbox stats: %w", err)
				}
				o.ObserveInt64(backlog, s.Pending)
				o.ObserveFloat64(age, s.OldestPendingAge.Seconds())
				return nil
			}, backlog, age)
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return t, nil
}

// Close unregisters the outbox gauges' callback and ends the spans still
// waiting for an ack (their messages were abandoned: event "abandoned").
// Call it after the routers using t stopped. It is safe to call twice;
// later calls return the first call's result.
func (t *Telemetry) Close() error {
	t.closeOnce.Do(func() {
		close(t.closing)
		if t.registration != nil {
			if err := t.registration.Unregister(); err != nil {
				t.closeErr = fmt.Errorf("telemetry: %w", err)
			}
		}
	})
	return t.closeErr
}

// Middleware returns the tracing middleware for system (one of the System
// constants, or the broker's semconv messaging.system value) and
// destination (the topic or queue; "" means the topic the Watermill
// handler subscribed, from message.SubscribeTopicFromCtx). Put it first in
// router.Config.Middlewares, outside the dead-letter and retry
// middlewares: it is the one hook telemetry needs. It makes the span and
// reads the rest of the message's timeline from its ackgap.Delivery (the
// broker adapter's, or one it puts in the message context when the
// subscriber fills none): the inbox's report on each attempt, then the
// settlement (ack or nack, the broker's confirmation, the lease). It
// returns an error wrapping "invalid config" when system is empty.
func (t *Telemetry) Middleware(destination, system string) (message.HandlerMiddleware, error) {
	c, err := t.consumer(destination, system)
	if err != nil {
		return nil, err
	}
	return c.middleware, nil
}

// consumer returns the spans' maker for destination and system.
func (t *Telemetry) consumer(destination, system string) (*consumer, error) {
	if system == "" {
		return nil, errors.New("invalid config: system is empty: pass the broker's messaging.system (telemetry.SystemKafka, SystemAWSSQS, SystemGoChannel)")
	}
	c := &consumer{t: t, system: system, destination: destination}
	if destination != "" {
		c.spanName = "process " + destination
	}
	return c, nil
}

// Begin returns a function that starts a message's consumer span as
// [Telemetry.Middleware] does before it calls the handler, for code that
// drives a message's processing itself rather than through a Watermill
// handler chain (package batch: batch.Config.Trace). The message's
// context then carries the span, the traceparent the inbox keeps, and the
// ackgap.Delivery the inbox reports on. Call the end it returns once, with the
// processing's error (nil: the message is to be acked), when the outcome
// is final and before the ack; the span then ends at the broker's
// confirmation when an ackgap.Delivery in the message's context reports
// one, else at the message's Ack or Nack. It returns an error wrapping
// "invalid config" when system is empty.
func (t *Telemetry) Begin(destination, system string) (func(msg *message.Message) (end func(err error)), error) {
	c, err := t.consumer(destination, system)
	if err != nil {
		return nil, err
	}
	return c.start, nil
}

// Inject writes the trace context of ctx into msg's metadata with the
// configured propagator (W3C: keys traceparent and tracestate), so the
// consumer's span links to the producer's. Call it before publishing.
func (t *Telemetry) Inject(ctx context.Context, msg *message.Message) {
	if msg.Metadata == nil {
		msg.Metadata = message.Metadata{}
	}
	t.propagator.Inject(ctx, propagation.MapCarrier(msg.Metadata))
}
