// Package message is a stub of Watermill's message package for analysistest.
package message

import "context"

type Message struct {
	UUID     string
	Payload  []byte
	Metadata map[string]string
}

func (m *Message) Ack() bool                { return true }
func (m *Message) Nack() bool               { return true }
func (m *Message) Context() context.Context { return context.Background() }

type HandlerFunc func(msg *Message) ([]*Message, error)
type NoPublishHandlerFunc func(msg *Message) error
type HandlerMiddleware func(h HandlerFunc) HandlerFunc

type Publisher interface {
	Publish(topic string, messages ...*Message) error
}
type Subscriber interface{}

type Handler struct{}
type Router struct{}

func (r *Router) AddHandler(name, subTopic string, sub Subscriber, pubTopic string, pub Publisher, h HandlerFunc) *Handler {
	return nil
}
func (r *Router) AddNoPublisherHandler(name, subTopic string, sub Subscriber, h NoPublishHandlerFunc) *Handler {
	return nil
}
func (r *Router) AddConsumerHandler(name, subTopic string, sub Subscriber, h NoPublishHandlerFunc) *Handler {
	return nil
}
func (r *Router) AddMiddleware(m ...HandlerMiddleware) {}

// RouterConfig is a stub.
type RouterConfig struct{}

// NewRouter is a stub.
func NewRouter(c RouterConfig, logger any) (*Router, error) { return &Router{}, nil }

// AddMiddleware on one handler.
func (h *Handler) AddMiddleware(m ...HandlerMiddleware) {}

// Run is a stub.
func (r *Router) Run(ctx context.Context) error { return nil }
