package ackgap

import "context"

// TraceParentHeader is the W3C Trace Context header
// (https://www.w3.org/TR/trace-context/#traceparent-header): the name the
// traceparent has in message metadata and in outbox row headers.
const TraceParentHeader = "traceparent"

type traceParentKey struct{}

// WithTraceParent returns a copy of ctx carrying the W3C traceparent
// (https://www.w3.org/TR/trace-context/, "00-<32 hex trace id>-<16 hex
// span id>-<2 hex flags>") of the span that processes the message. The
// telemetry package sets it; the inbox middleware stores it with the inbox
// row, so that a later copy of the event can be linked to the delivery
// that applied it. The core does not parse it.
func WithTraceParent(ctx context.Context, traceParent string) context.Context {
	return context.WithValue(ctx, traceParentKey{}, traceParent)
}

// TraceParentFromContext returns the traceparent set by [WithTraceParent],
// or "" when there is none.
func TraceParentFromContext(ctx context.Context) string {
	s, _ := ctx.Value(traceParentKey{}).(string)
	return s
}
