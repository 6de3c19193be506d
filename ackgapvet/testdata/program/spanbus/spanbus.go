// Package spanbus runs each event's delivery inside a span: the work is a
// closure given to the tracer, an interface of a library, and the closure
// calls the delivery through an interface of the application.
package spanbus

import (
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/trace"
)

// Deliverer delivers an event.
type Deliverer interface {
	Deliver(ctx context.Context, body []byte) error
}

// Webhook posts events to a webhook.
type Webhook struct{ C *http.Client }

// Deliver posts the event.
func (w *Webhook) Deliver(ctx context.Context, body []byte) error {
	_, err := w.C.Post("https://hooks.example/event", "application/json", nil)
	return err
}

// Bus delivers each event inside a span.
type Bus struct {
	T trace.Tracer
	D Deliverer
}

// Handle is a Watermill handler.
func (b *Bus) Handle(msg *message.Message) error {
	return b.T.WithSpan(msg.Context(), "event", func(ctx context.Context) error {
		return b.D.Deliver(ctx, msg.Payload)
	})
}
