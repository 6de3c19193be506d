// Package kq wraps a kafka-go reader with a GroupID behind the code's own
// interface (wave 35, payment-gateway's KafkaConsumer).
package kq

import (
	"context"

	"github.com/segmentio/kafka-go"
)

// Consumer reads messages.
type Consumer interface {
	ReadMessage(ctx context.Context) (kafka.Message, error)
}

type reader struct{ r *kafka.Reader }

// New returns a consumer in group "payments".
func New() Consumer {
	return &reader{r: kafka.NewReader(kafka.ReaderConfig{GroupID: "payments", Topic: "payments"})}
}

func (c *reader) ReadMessage(ctx context.Context) (kafka.Message, error) {
	return c.r.ReadMessage(ctx)
}
