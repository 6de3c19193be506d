// Package propagation is a stub of go.opentelemetry.io/otel/propagation.
package propagation

import "context"

type MapCarrier map[string]string

type TraceContext struct{}

func (TraceContext) Extract(ctx context.Context, carrier MapCarrier) context.Context { return ctx }
