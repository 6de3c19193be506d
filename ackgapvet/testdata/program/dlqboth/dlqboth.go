// Package dlqboth commits a message after its dead-letter step and after
// a nil alike (field trial, wave 30: echoride's process): the handler's nil
// still decides that the message is done without a dead-letter record, so
// a publish failure the handler drops is committed as done.
package dlqboth

import (
	"context"

	"github.com/segmentio/kafka-go"
)

// Consumer matches riders.
type Consumer struct {
	R   *kafka.Reader
	Pub *kafka.Writer
	DLQ *kafka.Writer
}

func (c *Consumer) handle(ctx context.Context, m kafka.Message) error {
	if len(m.Value) == 0 {
		_ = c.Pub.WriteMessages(ctx, kafka.Message{Value: []byte("matching-failed")})
		return nil
	}
	return c.Pub.WriteMessages(ctx, kafka.Message{Value: m.Value})
}

func (c *Consumer) process(ctx context.Context, m kafka.Message) {
	if err := c.handle(ctx, m); err != nil {
		if c.DLQ.WriteMessages(ctx, m) != nil {
			return // not committed: delivered again after a restart
		}
		_ = c.R.CommitMessages(ctx, m)
		return
	}
	_ = c.R.CommitMessages(ctx, m)
}

// Run consumes matches.
func (c *Consumer) Run(ctx context.Context) {
	for {
		m, err := c.R.FetchMessage(ctx)
		if err != nil {
			return
		}
		c.process(ctx, m)
	}
}
