package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
)

// Attributes of the outbox effect spans ([Telemetry.OutboxEffect]).
const (
	// AttrOutboxKind: the row's kind ("charge", "email.receipt").
	AttrOutboxKind = attribute.Key("ackgap.outbox.kind")
	// AttrOutboxRowID: the row's id in the outbox table.
	AttrOutboxRowID = attribute.Key("ackgap.outbox.row_id")
	// AttrOutboxAttempt: which claim of the row this call belongs to, from
	// 1 (stores.OutboxRow.Attempts, which counts the current claim).
	AttrOutboxAttempt = attribute.Key("ackgap.outbox.attempt")
	// AttrIdempotencyKey: the row's idempotency key, which the effect
	// carries (spans only: high cardinality).
	AttrIdempotencyKey = attribute.Key("ackgap.idempotency_key")
)

// LinkWroteRow is the [AttrLinkKind] of an outbox effect span's link to the
// consumer span whose transaction wrote the row.
const LinkWroteRow = "wrote_row"

// OutboxEffect wraps an outbox relay effect in one span per call, so that
// a business event can be followed from the producer, through the
// consumer span that wrote the row, to the effect. The span is named
// spanName ("POST payments", "publish billing.charged") with kind (use
// trace.SpanKindClient for outbox.HTTP, trace.SpanKindProducer for
// outbox.Publish); it starts a trace of its own, linked (AttrLinkKind
// LinkWroteRow) to the span whose traceparent the row's headers carry
// (ackgap.AddOutbox and ackgap.ApplyTransition record it when
// the consumer runs behind [Telemetry.Middleware]), and records the row's
// kind, id, idempotency key, event id and attempt. The effect gets the
// span in its context and the row with its trace context replaced by the
// span's (the propagator's keys in Headers: W3C traceparent), so the HTTP
// request or the published message carries the effect's span to the next
// service. An error sets status Error and error.type, and is returned as
// it is (the relay decides: retry, dead).
func (t *Telemetry) OutboxEffect(spanName string, kind trace.SpanKind, effect outbox.Effect) outbox.Effect {
	return func(ctx context.Context, row stores.OutboxRow) error {
		opts := []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithNewRoot()}
		if tp := row.Headers[ackgap.TraceParentHeader]; tp != "" {
			wrote := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
				propagation.MapCarrier{ackgap.TraceParentHeader: tp}))
			if wrote.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: wrote,
					Attributes: []attribute.KeyValue{AttrLinkKind.String(LinkWroteRow)}}))
			}
		}
		ctx, span := t.tracer.Start(ctx, spanName, opts...)
		defer span.End()
		if span.IsRecording() {
			span.SetAttributes(
				AttrOutboxKind.String(row.Kind),
				AttrOutboxRowID.Int64(row.ID),
				AttrIdempotencyKey.String(row.IdempotencyKey),
				AttrOutboxAttempt.Int(row.Attempts),
			)
			if row.EventID != "" {
				span.SetAttributes(AttrEventID.String(row.EventID))
			}
			if row.Consumer != "" {
				span.SetAttributes(AttrConsumer.String(row.Consumer))
			}
		}
		headers := make(map[string]string, len(row.Headers)+2)
		for k, v := range row.Headers {
			headers[k] = v
		}
		t.propagator.Inject(ctx, propagation.MapCarrier(headers))
		row.Headers = headers
		err := effect(ctx, row)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		}
		return err
	}
}
