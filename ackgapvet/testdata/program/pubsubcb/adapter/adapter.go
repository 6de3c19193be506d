// Package adapter turns the application's handlers into Pub/Sub callbacks
// held in a struct field (field trial, wave 58: gqueue's ToGPubSubHandler,
// whose returned literal sets the Handle's Handler).
package adapter

import (
	"bytes"
	"context"
	"log"
	"net/http"

	"cloud.google.com/go/pubsub"
)

// Handle pairs a subscription name with its callback.
type Handle struct {
	Name    string
	Handler func(context.Context, *pubsub.Message)
}

// Webhook posts each message to a URL.
type Webhook struct {
	URL    string
	Client *http.Client
}

// ToHandle returns the webhook's callback: it acks, then posts, so a
// failed post is lost.
func (w Webhook) ToHandle() Handle {
	return Handle{Name: "webhook", Handler: func(ctx context.Context, m *pubsub.Message) {
		m.Ack()
		resp, err := w.Client.Post(w.URL, "application/json", bytes.NewReader(m.Data))
		if err != nil {
			log.Printf("webhook: %v", err)
			return
		}
		resp.Body.Close()
	}}
}
