package bgcontext

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/propagation"
)

// handleInert compares with context.Background() and extracts a remote span
// context into a fresh one: neither carries work (clean).
func handleInert(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if ctx == context.Background() {
		return events.SQSEventResponse{}, nil
	}
	for _, r := range ev.Records {
		_ = propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": r.Body})
	}
	return events.SQSEventResponse{}, nil
}
