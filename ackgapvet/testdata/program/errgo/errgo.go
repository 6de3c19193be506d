// Package errgo: each message a generator's receive loop sends is handled
// in its own errgroup goroutine, the function given to Go made by a
// closure factory (wave 17, mailbadger's consumers: g.Go(fn(ctx, m))).
package errgo

import (
	"context"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"example.com/program/errgo/sender"
)

// Poll returns the channel the receive loop feeds.
func Poll(ctx context.Context, r *kafka.Reader) <-chan kafka.Message {
	out := make(chan kafka.Message)
	go func() {
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				return
			}
			out <- m
		}
	}()
	return out
}

// Run reads Poll's channel and hands each message to errgroup through a
// factory of handlers.
func Run(ctx context.Context, r *kafka.Reader, h *sender.Handler, g *errgroup.Group) {
	handle := func(ctx context.Context, m kafka.Message) func() error {
		return func() error { return h.Handle(ctx, m.Value) }
	}
	for m := range Poll(ctx, r) {
		g.Go(handle(ctx, m))
	}
}
