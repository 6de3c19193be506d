package bgcontext

import (
	"context"
	"time"

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

// handleBounded detaches a flush on purpose and bounds it (clean): the
// message's context may already be cancelled at shutdown.
func handleBounded(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	flush, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	<-flush.Done()
	return events.SQSEventResponse{}, nil
}

// handleFlush makes a fresh context once ctx is done, to flush (clean).
func handleFlush(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	select {
	case <-ctx.Done():
		flush := context.Background()
		_ = flush
	default:
	}
	return events.SQSEventResponse{}, nil
}
