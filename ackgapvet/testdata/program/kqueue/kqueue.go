// Package kqueue wraps a kafka-go reader: Receive takes one message and
// returns it; the loops that call it are in package kworker.
package kqueue

import (
	"context"

	"github.com/segmentio/kafka-go"
)

// Queue is the wrapper.
type Queue struct{ r *kafka.Reader }

// New opens the queue.
func New() *Queue {
	return &Queue{r: kafka.NewReader(kafka.ReaderConfig{GroupID: "workers", Topic: "tasks"})}
}

// Receive returns the next message, or nil.
func (q *Queue) Receive(ctx context.Context) *kafka.Message {
	m, err := q.r.FetchMessage(ctx)
	if err != nil {
		return nil
	}
	return &m
}

// Commit commits one message.
func (q *Queue) Commit(ctx context.Context, m *kafka.Message) error {
	return q.r.CommitMessages(ctx, *m)
}
