// Package pubsub stubs Google Cloud Pub/Sub's client.
package pubsub

import "context"

// Message is a received message.
type Message struct {
	ID   string
	Data []byte
}

// Ack acknowledges the message.
func (m *Message) Ack() {}

// Nack asks for the message to be redelivered.
func (m *Message) Nack() {}

// Subscription receives messages.
type Subscription struct{}

// Receive calls f with each message until ctx is done.
func (s *Subscription) Receive(ctx context.Context, f func(context.Context, *Message)) error {
	return nil
}
