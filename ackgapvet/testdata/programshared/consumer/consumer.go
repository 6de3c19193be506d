// Package consumer is a monorepo's shared module (replaced by a local
// directory in the program's go.mod): the consumer base every service
// embeds. Its loop is the program's consumer.
package consumer

import (
	"context"

	"github.com/segmentio/kafka-go"
)

// Handler is what a service gives the base.
type Handler interface {
	Handle(ctx context.Context, m kafka.Message) error
}

// Base fetches, hands each message to its Handler and commits it.
type Base struct {
	R *kafka.Reader
	H Handler
}

// Run is the receive loop.
func (b *Base) Run(ctx context.Context) error {
	for {
		m, err := b.R.FetchMessage(ctx)
		if err != nil {
			return err
		}
		if err := b.H.Handle(ctx, m); err != nil {
			continue
		}
		if err := b.R.CommitMessages(ctx, m); err != nil {
			return err
		}
	}
}
