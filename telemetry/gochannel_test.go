package telemetry_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/gochannelbroker"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/telemetry"
)

// gochannel runs a router with telemetry on a GoChannel broker (the
// adapter, which says the ack is the confirmation) and returns its
// publisher.
func onGoChannel(t *testing.T, b *bundle, h router.HandlerFunc[*sql.Tx], tune func(*router.Config)) message.Publisher {
	t.Helper()
	broker := gochannelbroker.New(nil)
	t.Cleanup(func() { _ = broker.Close() })
	pub, err := broker.Publisher()
	require.NoError(t, err)
	sub, err := broker.Subscriber("billing")
	require.NoError(t, err)
	runRouter(t, b, sqliteStore(t), telemetry.SystemGoChannel, "orders", sub, pub, h, tune)
	return pub
}

func newEvent(id string) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(`{"id":"`+id+`"}`))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, id)
	return msg
}

// TestGoChannelApplied: an applied message's span has the messaging
// attributes, a link to the producer's span, and the events received <=
// handler_start <= commit <= ack <= broker_confirmed; the ack gap metric is
// the time between the span's commit and broker_confirmed events.
func TestGoChannelApplied(t *testing.T) {
	b := setup(t)
	pub := onGoChannel(t, b, apply, nil)
	ctx, producer := b.producerSpan()
	msg := newEvent("evt-1")
	b.tel.Inject(ctx, msg)
	require.NotEmpty(t, msg.Metadata.Get("traceparent"))
	require.NoError(t, pub.Publish("orders", msg))

	span := b.ended(t, 1)[0]
	require.Equal(t, "process orders", span.Name())
	require.Equal(t, trace.SpanKindConsumer, span.SpanKind())
	require.Equal(t, telemetry.ScopeName, span.InstrumentationScope().Name)
	require.NotEqual(t, codes.Error, span.Status().Code)
	a := attrs(span)
	require.Equal(t, "gochannel", a["messaging.system"].AsString())
	require.Equal(t, "process", a["messaging.operation.type"].AsString())
	require.Equal(t, "orders", a["messaging.destination.name"].AsString())
	require.Equal(t, msg.UUID, a["messaging.message.id"].AsString())
	require.Equal(t, "evt-1", a[telemetry.AttrEventID].AsString())
	require.Equal(t, "billing", a[telemetry.AttrConsumer].AsString())
	require.Equal(t, telemetry.OutcomeApplied, a[telemetry.AttrOutcome].AsString())
	require.Equal(t, int64(1), a[telemetry.AttrAttempts].AsInt64())
	require.Equal(t, telemetry.ConfirmationAtAck, a[telemetry.AttrBrokerConfirmation].AsString())
	_, hasPartition := a["messaging.destination.partition.id"]
	require.False(t, hasPartition, "GoChannel has no partitions")
	require.Len(t, span.Links(), 1)
	require.Equal(t, producer.TraceID(), span.Links()[0].SpanContext.TraceID())
	require.Equal(t, producer.SpanID(), span.Links()[0].SpanContext.SpanID())
	require.NotEqual(t, producer.TraceID(), span.SpanContext().TraceID(), "the producer is a link, not the parent")

	requireTimeline(t, span, telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventCommit,
		telemetry.EventAck, telemetry.EventBrokerConfirmed)
	_, at := events(span)
	require.Equal(t, at[telemetry.EventAck], at[telemetry.EventBrokerConfirmed], "GoChannel: the ack is the confirmation")
	gap := at[telemetry.EventBrokerConfirmed].Sub(at[telemetry.EventCommit])
	require.InDelta(t, gap.Seconds(), a[telemetry.AttrAckGap].AsFloat64(), 1e-9)
	t.Logf("GoChannel: ack gap (commit -> ack = confirmation) %s", gap)

	ms := b.metrics(t)
	dps := histogram(t, ms, telemetry.MetricAckGap)
	require.Len(t, dps, 1)
	require.Equal(t, uint64(1), dps[0].Count)
	require.InDelta(t, gap.Seconds(), dps[0].Sum, 1e-9, "metric and span agree")
	v, _ := dps[0].Attributes.Value(telemetry.AttrBrokerConfirmation)
	require.Equal(t, telemetry.ConfirmationAtAck, v.AsString())

	proc := histogram(t, ms, telemetry.MetricProcessDuration)
	require.Len(t, proc, 1)
	require.Equal(t, uint64(1), proc[0].Count)
	require.LessOrEqual(t, proc[0].Sum, at[telemetry.EventAck].Sub(at[telemetry.EventReceived]).Seconds(), "processing ends before the ack")
	require.GreaterOrEqual(t, proc[0].Sum, at[telemetry.EventCommit].Sub(at[telemetry.EventReceived]).Seconds(), "processing includes the commit")
	require.Equal(t, int64(1), counter(t, ms, telemetry.MetricOutcomes, telemetry.AttrOutcome, telemetry.OutcomeApplied))
	require.Equal(t, int64(0), counter(t, ms, telemetry.MetricDuplicatesSkipped, "", ""))
	_, hasHeadroom := ms[telemetry.MetricLeaseHeadroom]
	require.False(t, hasHeadroom, "GoChannel has no lease")
	noHighCardinality(t, ms)
}

// TestGoChannelDuplicate: a second copy of an event is a duplicate span
// without handler_start and commit events, still acked, and counted.
func TestGoChannelDuplicate(t *testing.T) {
	b := setup(t)
	pub := onGoChannel(t, b, apply, nil)
	require.NoError(t, pub.Publish("orders", newEvent("evt-1")))
	require.NoError(t, pub.Publish("orders", newEvent("evt-1")))
	spans := b.ended(t, 2)
	require.Equal(t, telemetry.OutcomeApplied, attrs(spans[0])[telemetry.AttrOutcome].AsString())
	dup := spans[1]
	a := attrs(dup)
	require.Equal(t, telemetry.OutcomeDuplicate, a[telemetry.AttrOutcome].AsString())
	require.Equal(t, "evt-1", a[telemetry.AttrEventID].AsString())
	names, _ := events(dup)
	require.NotContains(t, names, telemetry.EventCommit)
	require.NotContains(t, names, telemetry.EventHandlerStart)
	requireTimeline(t, dup, telemetry.EventReceived, telemetry.EventAck, telemetry.EventBrokerConfirmed)
	_, hasGap := a[telemetry.AttrAckGap]
	require.False(t, hasGap, "no commit, no ack gap")
	require.NotEqual(t, codes.Error, dup.Status().Code)

	ms := b.metrics(t)
	require.Equal(t, int64(1), counter(t, ms, telemetry.MetricDuplicatesSkipped, "", ""))
	require.Equal(t, int64(1), counter(t, ms, telemetry.MetricOutcomes, telemetry.AttrOutcome, telemetry.OutcomeDuplicate))
	require.Equal(t, uint64(1), histogram(t, ms, telemetry.MetricAckGap)[0].Count, "only the applied copy has an ack gap")
	noHighCardinality(t, ms)
}

// TestGoChannelFailed: a handler failing with a retryable error that the
// router does not dead-letter (the store is unavailable) is nacked: the
// span has status Error, error.type, an attempt_failed event and a nack,
// and no commit, ack or confirmation. The redelivery applies.
func TestGoChannelFailed(t *testing.T) {
	b := setup(t)
	var first once
	pub := onGoChannel(t, b, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		if first.first(msg.Metadata.Get("event_id")) {
			return fmt.Errorf("reading the account: %w", ackgap.ErrStoreUnavailable)
		}
		return apply(ctx, tx, msg)
	}, nil)
	require.NoError(t, pub.Publish("orders", newEvent("evt-1")))
	spans := b.ended(t, 2)

	failed := spans[0]
	require.Equal(t, codes.Error, failed.Status().Code)
	require.Contains(t, failed.Status().Description, "store unavailable")
	a := attrs(failed)
	require.Equal(t, telemetry.OutcomeFailed, a[telemetry.AttrOutcome].AsString())
	require.Equal(t, "store_unavailable", a["error.type"].AsString())
	require.Equal(t, telemetry.ConfirmationNone, a[telemetry.AttrBrokerConfirmation].AsString())
	names, _ := events(failed)
	require.NotContains(t, names, telemetry.EventAck)
	require.NotContains(t, names, telemetry.EventCommit)
	require.NotContains(t, names, telemetry.EventBrokerConfirmed)
	requireTimeline(t, failed, telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventAttemptFailed, telemetry.EventNack)

	applied := spans[1]
	require.Equal(t, telemetry.OutcomeApplied, attrs(applied)[telemetry.AttrOutcome].AsString())
	requireTimeline(t, applied, telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventCommit,
		telemetry.EventAck, telemetry.EventBrokerConfirmed)

	ms := b.metrics(t)
	require.Equal(t, int64(1), counter(t, ms, telemetry.MetricOutcomes, telemetry.AttrOutcome, telemetry.OutcomeFailed))
	var failedProc int
	for _, dp := range histogram(t, ms, telemetry.MetricProcessDuration) {
		if v, ok := dp.Attributes.Value("error.type"); ok {
			require.Equal(t, "store_unavailable", v.AsString())
			failedProc += int(dp.Count)
		}
	}
	require.Equal(t, 1, failedProc)
}

// TestGoChannelRetriedThenDeadLettered: attempts in place show one
// handler_start per attempt; a message the router dead-letters is acked,
// with outcome dead_lettered, status Error and the reason as error.type.
func TestGoChannelRetriedThenDeadLettered(t *testing.T) {
	b := setup(t)
	pub := onGoChannel(t, b, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		return errFlaky
	}, func(c *router.Config) {
		c.MaxAttempts, c.RetryInitialInterval, c.RetryMaxInterval = 3, time.Millisecond, time.Millisecond
	})
	require.NoError(t, pub.Publish("orders", newEvent("evt-1")))
	span := b.ended(t, 1)[0]
	a := attrs(span)
	require.Equal(t, telemetry.OutcomeDeadLettered, a[telemetry.AttrOutcome].AsString())
	require.Equal(t, ackgap.ReasonAttemptsExhausted, a["error.type"].AsString())
	require.Equal(t, ackgap.ReasonAttemptsExhausted, a[telemetry.AttrDeadLetterReason].AsString())
	require.Equal(t, int64(3), a[telemetry.AttrAttempts].AsInt64())
	require.Equal(t, codes.Error, span.Status().Code)
	names, _ := events(span)
	starts := 0
	for _, n := range names {
		if n == telemetry.EventHandlerStart {
			starts++
		}
	}
	require.Equal(t, 3, starts)
	require.NotContains(t, names, telemetry.EventCommit)
	requireTimeline(t, span, telemetry.EventReceived, telemetry.EventAck, telemetry.EventBrokerConfirmed)

	ms := b.metrics(t)
	require.Equal(t, int64(1), counter(t, ms, telemetry.MetricOutcomes, telemetry.AttrOutcome, telemetry.OutcomeDeadLettered))
}

// TestRejectedDeadLettered: a message without an event id is rejected by
// the inbox and dead-lettered with missing_event_id.
func TestRejectedDeadLettered(t *testing.T) {
	b := setup(t)
	pub := onGoChannel(t, b, apply, nil)
	require.NoError(t, pub.Publish("orders", message.NewMessage(watermill.NewUUID(), []byte(`{}`))))
	span := b.ended(t, 1)[0]
	a := attrs(span)
	require.Equal(t, telemetry.OutcomeDeadLettered, a[telemetry.AttrOutcome].AsString())
	require.Equal(t, ackgap.ReasonMissingEventID, a["error.type"].AsString())
	_, hasEventID := a[telemetry.AttrEventID]
	require.False(t, hasEventID)
}

// TestUnobserved: behind a plain Watermill GoChannel (no ackgap.Delivery
// in the message context) the middleware watches the ack itself and the
// span says the confirmation is unobserved; the ack gap runs to the ack.
func TestUnobserved(t *testing.T) {
	b := setup(t)
	pubsub := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, watermill.NopLogger{})
	t.Cleanup(func() { _ = pubsub.Close() })
	runRouter(t, b, sqliteStore(t), telemetry.SystemGoChannel, "orders", pubsub, pubsub, apply, nil)
	require.NoError(t, pubsub.Publish("orders", newEvent("evt-1")))
	span := b.ended(t, 1)[0]
	a := attrs(span)
	require.Equal(t, telemetry.ConfirmationUnobserved, a[telemetry.AttrBrokerConfirmation].AsString())
	names, at := events(span)
	require.NotContains(t, names, telemetry.EventBrokerConfirmed)
	requireTimeline(t, span, telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventCommit, telemetry.EventAck)
	gap := at[telemetry.EventAck].Sub(at[telemetry.EventCommit])
	dps := histogram(t, b.metrics(t), telemetry.MetricAckGap)
	require.InDelta(t, gap.Seconds(), dps[0].Sum, 1e-9)
	v, _ := dps[0].Attributes.Value(telemetry.AttrBrokerConfirmation)
	require.Equal(t, telemetry.ConfirmationUnobserved, v.AsString())
}

// TestReportedSettlement drives the middleware with a fake adapter that
// reports its settlement: ack, confirmation and lease, in the adapter's
// callback; lease headroom is the deadline minus the confirmation, and a
// negative one marks the lease expired.
func TestReportedSettlement(t *testing.T) {
	b := setup(t)
	mw, err := b.tel.Middleware("queue-a", telemetry.SystemAWSSQS)
	require.NoError(t, err)
	obs := recordInbox(t)
	// The report's times are taken inside the handler, after the
	// middleware started the span, as the inbox takes them.
	var committed time.Time
	h := mw(func(msg *message.Message) ([]*message.Message, error) {
		received := time.Now()
		committed = received.Add(10 * time.Millisecond)
		obs(msg.Context(), &ackgap.InboxReport{Consumer: "c1", EventID: "E1", Outcome: ackgap.OutcomeApplied,
			Received: received, HandlerStarted: received.Add(time.Millisecond), Committed: committed})
		return nil, nil
	})
	// run delivers one message whose lease ends lease after the commit and
	// whose ack is confirmed confirmed after it (never when negative).
	run := func(lease, confirmed time.Duration, err error) sdktrace.ReadOnlySpan {
		b.spans.Reset()
		d := &ackgap.Delivery{MessageID: "sqs-1", ReceiveCount: 2, Confirmation: ackgap.ConfirmationReported}
		msg := newEvent("E1")
		msg.SetContext(ackgap.WithDelivery(context.Background(), d))
		_, herr := h(msg)
		require.NoError(t, herr)
		require.Empty(t, b.spans.Ended(), "the span waits for the settlement")
		var confirmedAt time.Time
		if confirmed >= 0 {
			confirmedAt = committed.Add(confirmed)
		}
		d.Settle(ackgap.Settlement{Acked: true, At: committed.Add(time.Millisecond), Confirmed: confirmedAt,
			LeaseDeadline: committed.Add(lease), Err: err})
		return b.ended(t, 1)[0]
	}

	span := run(30*time.Second, 20*time.Millisecond, nil)
	a := attrs(span)
	require.Equal(t, "process queue-a", span.Name())
	require.Equal(t, "aws_sqs", a["messaging.system"].AsString())
	require.Equal(t, "sqs-1", a["messaging.message.id"].AsString())
	require.Equal(t, int64(2), a[telemetry.AttrDeliveryAttempt].AsInt64())
	require.Equal(t, telemetry.ConfirmationConfirmed, a[telemetry.AttrBrokerConfirmation].AsString())
	require.InDelta(t, 0.020, a[telemetry.AttrAckGap].AsFloat64(), 1e-9)
	require.InDelta(t, 29.980, a[telemetry.AttrLeaseHeadroom].AsFloat64(), 1e-9)
	require.False(t, a[telemetry.AttrLeaseExpired].AsBool())
	require.Equal(t, committed.Add(20*time.Millisecond), span.EndTime(), "the span ends at the confirmation")

	span = run(5*time.Millisecond, 20*time.Millisecond, nil)
	a = attrs(span)
	require.InDelta(t, -0.015, a[telemetry.AttrLeaseHeadroom].AsFloat64(), 1e-9)
	require.True(t, a[telemetry.AttrLeaseExpired].AsBool(), "confirmed after the lease: a duplicate is coming")

	// Not confirmed (an SQS delete after the lease ended): no ack gap, but
	// the headroom up to the failure, negative here.
	span = run(-time.Second, -1, fmt.Errorf("%w: receipt handle expired", ackgap.ErrAckNotConfirmed))
	a = attrs(span)
	require.Equal(t, telemetry.ConfirmationFailed, a[telemetry.AttrBrokerConfirmation].AsString())
	require.Equal(t, "ack_not_confirmed", a["error.type"].AsString())
	require.Equal(t, codes.Error, span.Status().Code)
	require.NotContains(t, a, telemetry.AttrAckGap)
	require.Negative(t, a[telemetry.AttrLeaseHeadroom].AsFloat64())
	require.True(t, a[telemetry.AttrLeaseExpired].AsBool())
	requireTimeline(t, span, telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventCommit,
		telemetry.EventAck, telemetry.EventConfirmationFailed)

	ms := b.metrics(t)
	counts := map[string]uint64{}
	for _, dp := range histogram(t, ms, telemetry.MetricLeaseHeadroom) {
		v, _ := dp.Attributes.Value(telemetry.AttrBrokerConfirmation)
		counts[v.AsString()] += dp.Count
		if v.AsString() == telemetry.ConfirmationConfirmed {
			require.InDelta(t, 29.980-0.015, dp.Sum, 1e-9)
		}
	}
	require.Equal(t, map[string]uint64{telemetry.ConfirmationConfirmed: 2, telemetry.ConfirmationFailed: 1}, counts)
	require.Equal(t, uint64(2), histogram(t, ms, telemetry.MetricAckGap)[0].Count)
	require.Equal(t, int64(1), counter(t, ms, telemetry.MetricAcksUnconfirmed, "", ""))
	noHighCardinality(t, ms)
}

// TestNoRecorder: with the noop providers the middleware adds nothing to
// the message context (no span, no ackgap.Delivery of its own).
func TestNoRecorder(t *testing.T) {
	tel, err := telemetry.New(nil) // globals: nothing installed
	require.NoError(t, err)
	defer tel.Close()
	mw, err := tel.Middleware("", telemetry.SystemKafka)
	require.NoError(t, err)
	msg := newEvent("E1")
	before := msg.Context()
	_, err = mw(func(m *message.Message) ([]*message.Message, error) {
		require.Equal(t, before, m.Context(), "no state, no span in the context")
		_, ok := ackgap.DeliveryFromContext(m.Context())
		require.False(t, ok)
		return nil, nil
	})(msg)
	require.NoError(t, err)

	_, err = tel.Middleware("", "")
	require.ErrorContains(t, err, "invalid config")
}

// recordInbox returns what the inbox does with its report, for tests that
// play the inbox: record it on the message's ackgap.Delivery, which the
// telemetry middleware reads.
func recordInbox(t *testing.T) func(ctx context.Context, r *ackgap.InboxReport) {
	return func(ctx context.Context, r *ackgap.InboxReport) {
		d, ok := ackgap.DeliveryFromContext(ctx)
		require.True(t, ok, "the telemetry middleware puts a Delivery in the context")
		d.RecordInbox(r)
	}
}

// TestCloseEndsWaitingSpans: a message neither acked nor nacked keeps its
// span open until Close, which ends it as abandoned.
func TestCloseEndsWaitingSpans(t *testing.T) {
	b := setup(t)
	mw, err := b.tel.Middleware("orders", telemetry.SystemGoChannel)
	require.NoError(t, err)
	_, err = mw(func(*message.Message) ([]*message.Message, error) { return nil, nil })(newEvent("E1"))
	require.NoError(t, err)
	require.Empty(t, b.spans.Ended())
	require.NoError(t, b.tel.Close())
	span := b.ended(t, 1)[0]
	names, _ := events(span)
	require.Contains(t, names, telemetry.EventAbandoned)
	require.Equal(t, telemetry.OutcomeUnknown, attrs(span)[telemetry.AttrOutcome].AsString())
}

// TestOutboxGauges: Config.OutboxStats feeds the outbox gauges at each
// collection, until Close.
func TestOutboxGauges(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, err := telemetry.New(&telemetry.Config{MeterProvider: mp, OutboxStats: func(context.Context) (telemetry.OutboxStats, error) {
		return telemetry.OutboxStats{Pending: 7, OldestPendingAge: 1500 * time.Millisecond}, nil
	}})
	require.NoError(t, err)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]any{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				got[m.Name] = d.DataPoints[0].Value
			case metricdata.Gauge[float64]:
				got[m.Name] = d.DataPoints[0].Value
			}
		}
	}
	require.Equal(t, map[string]any{telemetry.MetricOutboxBacklog: int64(7), telemetry.MetricOutboxOldestPendingAge: 1.5}, got)

	require.NoError(t, tel.Close())
	require.NoError(t, tel.Close(), "Close is idempotent")
	rm = metricdata.ResourceMetrics{}
	require.NoError(t, reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
				require.Empty(t, g.DataPoints, "no observation after Close")
			}
		}
	}
}
