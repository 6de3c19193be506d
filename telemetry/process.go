package telemetry

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/ackgap/ackgap"
)

// consumer is one Middleware: a messaging system and a destination.
type consumer struct {
	t                   *Telemetry
	system, destination string
	spanName            string // "process <destination>" when destination is fixed
	namesMu             sync.RWMutex
	names               map[string]string // destination -> span name
}

// spanNamesMax bounds the span-name cache for destinations read from the
// message context.
const spanNamesMax = 1024

func (c *consumer) name(destination string) string {
	if c.spanName != "" {
		return c.spanName
	}
	if destination == "" {
		return "process"
	}
	c.namesMu.RLock()
	n, ok := c.names[destination]
	c.namesMu.RUnlock()
	if ok {
		return n
	}
	n = "process " + destination
	c.namesMu.Lock()
	if c.names == nil {
		c.names = make(map[string]string)
	}
	if len(c.names) < spanNamesMax {
		c.names[destination] = n
	}
	c.namesMu.Unlock()
	return n
}

// metricsEnabled reports whether any of the message instruments records.
func (t *Telemetry) metricsEnabled(ctx context.Context) bool {
	return t.processDuration.Enabled(ctx) || t.outcomes.Enabled(ctx) || t.duplicates.Enabled(ctx) ||
		t.ackGap.Enabled(ctx) || t.leaseHeadroom.Enabled(ctx) || t.unconfirmed.Enabled(ctx)
}

type processKey struct{}

// consumerSpan are the start options of every span.
var consumerSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}

// process is one message's way through the middleware, until its ack is
// confirmed.
type process struct {
	c           *consumer
	ctx         context.Context // carries span
	span        trace.Span
	recording   bool
	metrics     bool
	destination string
	group       string
	delivery    *ackgap.Delivery // the message's timeline (the adapter's, or one of ours)
	start       time.Time

	// Written by observe, from the delivery's inbox reports, when the
	// chain returned; read-only afterwards.
	attempts  int
	consumer  string
	eventID   string
	outcome   ackgap.Outcome
	lastErr   error
	committed time.Time

	// Set when the chain returned.
	finalOutcome string
}

func (c *consumer) middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) (produced []*message.Message, err error) {
		end := c.start(msg)
		defer func() {
			if r := recover(); r != nil {
				end(fmt.Errorf("telemetry: handler panicked: %v", r))
				panic(r)
			}
		}()
		produced, err = h(msg)
		end(err)
		return produced, err
	}
}

// start starts msg's span and puts it, with the process, in msg's context;
// end takes what the processing returned (the handler chain's error) and
// watches the ack and its confirmation.
func (c *consumer) start(msg *message.Message) (end func(err error)) {
	parent := msg.Context()
	dest := c.destination
	if dest == "" {
		dest = message.SubscribeTopicFromCtx(parent)
	}
	// The span stamps its own start: no per-message option to allocate.
	ctx, span := c.t.tracer.Start(parent, c.name(dest), consumerSpan...)
	start := time.Now()
	recording, metrics := span.IsRecording(), c.t.metricsEnabled(parent)
	if !recording && !metrics {
		// Nothing records (no SDK, or sampled out without metrics): pass
		// the sampling decision on to child spans, nothing more.
		if span.SpanContext().IsValid() {
			msg.SetContext(ctx)
		}
		return func(error) { span.End() }
	}
	p := &process{c: c, span: span, recording: recording, metrics: metrics, destination: dest, start: start}
	d, ok := ackgap.DeliveryFromContext(parent)
	if !ok {
		// The subscriber does not fill the hook: a record of our own, for
		// the inbox to report on.
		d = &ackgap.Delivery{}
		ctx = ackgap.WithDelivery(ctx, d)
	}
	p.delivery, p.group = d, d.ConsumerGroup
	if recording {
		p.begin(msg)
	}
	p.ctx = ctx
	if recording {
		// Kept with the inbox row, so a later copy links to this span.
		ctx = ackgap.WithTraceParent(ctx, traceParent(span.SpanContext()))
	}
	msg.SetContext(context.WithValue(ctx, processKey{}, p))
	return func(err error) { p.returned(msg, parent, err) }
}

// begin sets the span's messaging attributes, links it to the producer's
// span and adds the received event.
func (p *process) begin(msg *message.Message) {
	id := msg.UUID
	d := p.delivery
	if d.MessageID != "" {
		id = d.MessageID
	}
	attrs := make([]attribute.KeyValue, 0, 11)
	attrs = append(attrs,
		semconv.MessagingSystemKey.String(p.c.system),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingMessageID(id),
		semconv.MessagingMessageBodySize(len(msg.Payload)),
	)
	if p.destination != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(p.destination))
	}
	if p.group != "" {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(p.group))
	}
	if d.HasOffset {
		attrs = append(attrs, semconv.MessagingDestinationPartitionID(strconv.Itoa(int(d.Partition))),
			semconv.MessagingKafkaOffset(int(d.Offset)))
	}
	if d.ReceiveCount > 0 {
		attrs = append(attrs, AttrDeliveryAttempt.Int(d.ReceiveCount))
	}
	p.span.SetAttributes(attrs...)
	// The producer's context is a link, not the parent: the message may be
	// processed long after, and many times (semconv messaging spans).
	if len(msg.Metadata) > 0 {
		producer := trace.SpanContextFromContext(
			p.c.t.propagator.Extract(context.Background(), propagation.MapCarrier(msg.Metadata)))
		if producer.IsValid() {
			p.span.AddLink(trace.Link{SpanContext: producer})
		}
	}
	p.span.AddEvent(EventReceived, trace.WithTimestamp(p.start))
}

// observe records one inbox report (one attempt).
func (p *process) observe(r *ackgap.InboxReport) {
	p.attempts++
	p.consumer = r.Consumer
	if r.EventID != "" {
		p.eventID = r.EventID
	}
	p.outcome, p.lastErr = r.Outcome, r.Err
	if r.Outcome == ackgap.OutcomeApplied {
		p.committed = r.Committed
	}
	if !p.recording {
		return
	}
	attempt := AttrAttempt.Int(p.attempts)
	if !r.HandlerStarted.IsZero() {
		p.span.AddEvent(EventHandlerStart, trace.WithTimestamp(r.HandlerStarted), trace.WithAttributes(attempt))
	}
	if !r.Committed.IsZero() {
		p.span.AddEvent(EventCommit, trace.WithTimestamp(r.Committed))
	}
	if r.Err != nil {
		p.span.AddEvent(EventAttemptFailed, trace.WithAttributes(attempt,
			semconv.ErrorTypeKey.String(errorType(r.Err)), semconv.ExceptionMessage(r.Err.Error())))
	}
	if r.FirstTraceParent != "" {
		first := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
			propagation.MapCarrier{traceParentHeader: r.FirstTraceParent}))
		if first.IsValid() {
			p.span.AddLink(trace.Link{SpanContext: first, Attributes: []attribute.KeyValue{AttrLinkKind.String(LinkFirstDelivery)}})
		}
	}
}

// traceParentHeader is the W3C Trace Context header
// (https://www.w3.org/TR/trace-context/#traceparent-header).
const traceParentHeader = "traceparent"

// traceParent formats sc as a W3C traceparent header value: version 00,
// trace id, span id, flags, in lower-case hex.
func traceParent(sc trace.SpanContext) string {
	tid, sid := sc.TraceID(), sc.SpanID()
	return "00-" + hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(sid[:]) + "-" + sc.TraceFlags().String()
}

// returned records what the handler chain returned and waits for the
// settlement: from the adapter when it reports one, else by watching the
// message's ack and nack.
func (p *process) returned(msg *message.Message, parent context.Context, err error) {
	end := time.Now()
	for _, r := range p.delivery.Inbox() {
		p.observe(&r)
	}
	outcome, errType := p.classify(msg, err)
	p.finalOutcome = outcome
	if p.recording {
		attrs := make([]attribute.KeyValue, 0, 6)
		attrs = append(attrs, AttrOutcome.String(outcome), AttrAttempts.Int(p.attempts))
		if p.consumer != "" {
			attrs = append(attrs, AttrConsumer.String(p.consumer))
		}
		if p.eventID != "" {
			attrs = append(attrs, AttrEventID.String(p.eventID))
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		switch {
		case err != nil:
			p.span.SetStatus(codes.Error, err.Error())
		case outcome == OutcomeDeadLettered:
			attrs = append(attrs, AttrDeadLetterReason.String(errType))
			p.span.SetStatus(codes.Error, "dead-lettered: "+errType)
		}
		p.span.SetAttributes(attrs...)
	}
	if p.metrics {
		t := p.c.t
		k := attrKey{kind: kindProcess, system: p.c.system, destination: p.destination, group: p.group,
			consumer: p.consumer, outcome: outcome, errorType: errType}
		t.processDuration.Record(p.ctx, end.Sub(p.start).Seconds(), t.attrs.get(k))
		k.kind, k.errorType = kindOutcome, ""
		t.outcomes.Add(p.ctx, 1, t.attrs.get(k))
		if outcome == OutcomeDuplicate {
			k.kind, k.outcome = kindConsumer, ""
			t.duplicates.Add(p.ctx, 1, t.attrs.get(k))
		}
	}
	if p.delivery.OnSettled(p.settled) {
		return
	}
	mode := ackgap.ConfirmationUnobserved
	if p.delivery.Confirmation == ackgap.ConfirmationAtAck {
		mode = ackgap.ConfirmationAtAck
	}
	go p.watch(msg, parent, mode)
}

// classify returns the delivery's outcome and its error.type ("" when it
// succeeded).
func (p *process) classify(msg *message.Message, err error) (outcome, errType string) {
	if err != nil {
		outcome = OutcomeFailed
		if p.outcome == ackgap.OutcomeRejected {
			outcome = OutcomeRejected
		}
		return outcome, errorType(err)
	}
	switch p.outcome {
	case "":
		return OutcomeUnknown, ""
	case ackgap.OutcomeFailed, ackgap.OutcomeRejected:
		// The chain returned nil after the inbox failed: the router's
		// dead-letter middleware published the message and acks it.
		reason := msg.Metadata.Get(ackgap.MetadataDeadLetterReason)
		if reason == "" {
			reason = errorType(p.lastErr)
		}
		return OutcomeDeadLettered, reason
	}
	return string(p.outcome), ""
}

func (p *process) settled(s ackgap.Settlement) { p.finish(s, ackgap.ConfirmationReported) }

// errAbandoned is the settlement error when the middleware saw neither
// ack nor nack.
var (
	errAbandoned       = errors.New("telemetry: the message context ended before an ack or nack")
	errTelemetryClosed = errors.New("telemetry: closed before the message was acked or nacked")
)

// watch waits for the ack or nack of msg, for adapters that do not report
// a settlement; it ends when the message's context ends or t closes.
func (p *process) watch(msg *message.Message, parent context.Context, mode ackgap.ConfirmationMode) {
	select {
	case <-msg.Acked():
		p.finish(ackgap.Settlement{Acked: true, At: time.Now()}, mode)
	case <-msg.Nacked():
		p.finish(ackgap.Settlement{At: time.Now()}, mode)
	case <-parent.Done():
		// Adapters cancel a message's context once it is settled: look
		// again before calling it abandoned.
		select {
		case <-msg.Acked():
			p.finish(ackgap.Settlement{Acked: true, At: time.Now()}, mode)
		case <-msg.Nacked():
			p.finish(ackgap.Settlement{At: time.Now()}, mode)
		default:
			p.finish(ackgap.Settlement{At: time.Now(), Err: errAbandoned}, mode)
		}
	case <-p.c.t.closing:
		p.finish(ackgap.Settlement{At: time.Now(), Err: errTelemetryClosed}, mode)
	}
}

// finish records the settlement and ends the span: at the broker's
// confirmation when there is one, else at the ack or nack.
func (p *process) finish(s ackgap.Settlement, mode ackgap.ConfirmationMode) {
	span := p.span
	end := s.At
	confirmation := ConfirmationNone
	switch {
	case s.Acked:
		span.AddEvent(EventAck, trace.WithTimestamp(s.At))
		var confirmed, gapEnd, failedAt time.Time
		switch {
		case s.Err != nil:
			confirmation = ConfirmationFailed
			now := time.Now()
			if now.Before(s.At) {
				now = s.At
			}
			end, failedAt = now, now
			span.AddEvent(EventConfirmationFailed, trace.WithTimestamp(now), trace.WithAttributes(
				semconv.ErrorTypeKey.String(errorType(s.Err)), semconv.ExceptionMessage(s.Err.Error())))
			if p.finalOutcome != OutcomeDeadLettered {
				span.SetStatus(codes.Error, s.Err.Error())
				span.SetAttributes(semconv.ErrorTypeKey.String(errorType(s.Err)))
			}
		case mode == ackgap.ConfirmationReported && !s.Confirmed.IsZero():
			confirmation, confirmed = ConfirmationConfirmed, s.Confirmed
		case mode == ackgap.ConfirmationAtAck:
			confirmation, confirmed = ConfirmationAtAck, s.At
		default:
			confirmation, gapEnd = ConfirmationUnobserved, s.At
		}
		if !confirmed.IsZero() {
			span.AddEvent(EventBrokerConfirmed, trace.WithTimestamp(confirmed))
			end, gapEnd = confirmed, confirmed
		}
		p.measure(s, confirmation, gapEnd, failedAt)
	case s.Err != nil:
		span.AddEvent(EventAbandoned, trace.WithTimestamp(s.At), trace.WithAttributes(
			semconv.ExceptionMessage(s.Err.Error())))
	default:
		span.AddEvent(EventNack, trace.WithTimestamp(s.At))
	}
	span.SetAttributes(AttrBrokerConfirmation.String(confirmation))
	if end.Before(p.start) {
		end = p.start
	}
	span.End(trace.WithTimestamp(end))
}

// measure records the ack gap and lease headroom of an acked message;
// gapEnd is the confirmation (or the ack when unobserved), zero when the
// broker did not confirm. failedAt is when an adapter reported that the
// ack was not confirmed (an SQS delete after the lease ended): no ack gap
// then, but the lease headroom up to that moment, negative when the lease
// had lapsed, which is what announces the duplicate.
func (p *process) measure(s ackgap.Settlement, confirmation string, gapEnd, failedAt time.Time) {
	t := p.c.t
	k := attrKey{kind: kindConsumer, system: p.c.system, destination: p.destination, group: p.group, consumer: p.consumer}
	if gapEnd.IsZero() {
		if p.metrics {
			t.unconfirmed.Add(p.ctx, 1, t.attrs.get(k))
		}
		if failedAt.IsZero() {
			return
		}
	}
	k.kind, k.confirmation = kindAck, confirmation
	if gapEnd.IsZero() {
		gapEnd = failedAt
	} else if !p.committed.IsZero() {
		gap := gapEnd.Sub(p.committed).Seconds()
		p.span.SetAttributes(AttrAckGap.Float64(gap))
		if p.metrics {
			t.ackGap.Record(p.ctx, gap, t.attrs.get(k))
		}
	}
	lease := s.LeaseDeadline
	if lease.IsZero() {
		lease = p.delivery.LeaseDeadline
	}
	if !lease.IsZero() {
		headroom := lease.Sub(gapEnd).Seconds()
		p.span.SetAttributes(AttrLeaseHeadroom.Float64(headroom), AttrLeaseExpired.Bool(headroom < 0))
		if p.metrics {
			t.leaseHeadroom.Record(p.ctx, headroom, t.attrs.get(k))
		}
	}
}
