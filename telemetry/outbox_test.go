package telemetry_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/gochannelbroker"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/telemetry"
)

// TestOutboxEffectFollowsTheEvent: a traced consumer queues an outbox row;
// the row's headers keep the consumer span's traceparent; the relay's
// effect, wrapped by OutboxEffect, makes a client span linked to the
// consumer span, and the HTTP request (real, over loopback) carries the
// client span's own trace context. A failing call is a span with status
// Error. So one event is followed producer -> consumer -> effect.
func TestOutboxEffectFollowsTheEvent(t *testing.T) {
	b := setup(t)
	store := sqliteStore(t)
	var (
		mu       sync.Mutex
		received []string // traceparent of each request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		received = append(received, r.Header.Get("traceparent"))
		if len(received) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the first call fails and is retried
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)

	queue := func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		return ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{
			Kind: "charge", IdempotencyKey: "charge:" + msg.Metadata.Get("event_id"), Payload: msg.Payload})
	}
	broker := gochannelbroker.New(nil)
	t.Cleanup(func() { _ = broker.Close() })
	pub, err := broker.Publisher()
	require.NoError(t, err)
	sub, err := broker.Subscriber("billing")
	require.NoError(t, err)
	runRouter(t, b, store, telemetry.SystemGoChannel, "orders", sub, pub, queue, nil)
	ctx, _ := b.producerSpan()
	msg := newEvent("evt-1")
	b.tel.Inject(ctx, msg)
	require.NoError(t, pub.Publish("orders", msg))
	consumer := b.ended(t, 1)[0]

	rows, err := store.ListOutbox(context.Background(), &stores.OutboxListParams{})
	require.NoError(t, err)
	require.Len(t, rows.Rows, 1)
	wrote := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
		propagation.MapCarrier(rows.Rows[0].Headers)))
	require.Equal(t, consumer.SpanContext().SpanID(), wrote.SpanID(), "the row keeps the consumer span's traceparent")

	relay, err := outbox.New(store, &outbox.Config{
		Effects:      map[string]outbox.Effect{"charge": b.tel.OutboxEffect("POST charge", trace.SpanKindClient, outbox.HTTP(srv.Client(), srv.URL))},
		PollInterval: 10 * time.Millisecond, RetryInitialInterval: 10 * time.Millisecond, RetryMaxInterval: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx) }()
	var calls []sdktrace.ReadOnlySpan
	eventually(t, 30*time.Second, "two effect spans", func() bool {
		calls = calls[:0]
		for _, s := range b.spans.Ended() {
			if s.SpanKind() == trace.SpanKindClient {
				calls = append(calls, s)
			}
		}
		return len(calls) >= 2
	})
	cancel()
	require.NoError(t, <-done)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, received, 2)
	for i, span := range calls[:2] {
		require.Equal(t, "POST charge", span.Name())
		require.NotEqual(t, consumer.SpanContext().TraceID(), span.SpanContext().TraceID(), "a trace of its own")
		require.Len(t, span.Links(), 1)
		link := span.Links()[0]
		require.Equal(t, consumer.SpanContext().SpanID(), link.SpanContext.SpanID(), "linked to the span that wrote the row")
		require.Equal(t, []attribute.KeyValue{telemetry.AttrLinkKind.String(telemetry.LinkWroteRow)}, link.Attributes)
		a := attrs(span)
		require.Equal(t, "charge", a[telemetry.AttrOutboxKind].AsString())
		require.Equal(t, "charge:evt-1", a[telemetry.AttrIdempotencyKey].AsString())
		require.Equal(t, "evt-1", a[telemetry.AttrEventID].AsString())
		require.Equal(t, int64(i+1), a[telemetry.AttrOutboxAttempt].AsInt64())
		sent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
			propagation.MapCarrier{ackgap.TraceParentHeader: received[i]}))
		require.Equal(t, span.SpanContext().SpanID(), sent.SpanID(), "the request carries the effect span")
	}
	require.Equal(t, codes.Error, calls[0].Status().Code, "the 503")
	require.NotEqual(t, codes.Error, calls[1].Status().Code)
}
