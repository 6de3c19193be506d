// Package ownloop commits after its handler returns nil; the handler
// starts its work in a goroutine and returns nil at once (wave 18,
// BharatMLStack skye's EmbeddingConsumer.Process).
package ownloop

import (
	"context"

	"github.com/segmentio/kafka-go"

	"example.com/program/ownloop/handler"
)

// Loop commits each message its handler accepted.
type Loop struct {
	R *kafka.Reader
	H *handler.Indexer
}

// Run fetches, hands the value to the handler, and commits on nil.
func (l *Loop) Run(ctx context.Context) {
	for {
		m, err := l.R.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := l.H.Process(m.Value); err != nil {
			return
		}
		_ = l.R.CommitMessages(ctx, m)
	}
}
