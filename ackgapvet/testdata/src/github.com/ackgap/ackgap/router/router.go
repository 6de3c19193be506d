// Package router is a stub of ackgap's router package.
package router

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ackgap/ackgap/stores"
)

type HandlerFunc[TTx any] func(ctx context.Context, tx TTx, msg *message.Message) error

type Config struct{ Consumer string }

type Router[TTx any] struct{}

func New[TTx any](store stores.Store[TTx], cfg *Config) (*Router[TTx], error) {
	return &Router[TTx]{}, nil
}

func (r *Router[TTx]) AddHandler(consumer, topic string, sub message.Subscriber, h HandlerFunc[TTx]) error {
	return nil
}

func JSON[TTx, T any](fn func(ctx context.Context, tx TTx, msg *message.Message, v T) error) HandlerFunc[TTx] {
	return nil
}

func ConsumerHandler[TTx any](h HandlerFunc[TTx]) message.NoPublishHandlerFunc { return nil }
