// Package subs stubs a pub/sub library whose subscriber returns a channel
// of messages that ack themselves (nytimes/gizmo's pubsub shape).
package subs

// SubscriberMessage is one received message.
type SubscriberMessage interface {
	Message() []byte
	Done() error
}

// Subscriber receives.
type Subscriber interface {
	Start() <-chan SubscriberMessage
	Stop() error
}
