// Package trace is a stub of OpenTelemetry's early (v0.x) trace API, whose
// Tracer ran a function inside a span.
package trace

import "context"

// StartOption is a stub.
type StartOption interface{}

// Tracer is a stub: WithSpan calls fn inside a new span.
type Tracer interface {
	WithSpan(ctx context.Context, spanName string, fn func(ctx context.Context) error, opts ...StartOption) error
}
