// Package paramgen: a generator makes a channel, hands it to the receive
// loop it starts (go c.consume(ctx, out)) and returns it; what is sent on
// the loop's parameter is handled where the generator's channel is read
// (wave 18, TeleBot's StartReceivingData).
package paramgen

import (
	"bytes"
	"context"
	"net/http"

	"github.com/segmentio/kafka-go"
)

// Consumer reads one topic.
type Consumer struct{ R *kafka.Reader }

// Start returns the channel the receive loop feeds.
func (c *Consumer) Start(ctx context.Context) <-chan []byte {
	out := make(chan []byte)
	go c.consume(ctx, out)
	return out
}

func (c *Consumer) consume(ctx context.Context, out chan<- []byte) {
	for {
		m, err := c.R.FetchMessage(ctx)
		if err != nil {
			return
		}
		out <- m.Value
		_ = c.R.CommitMessages(ctx, m)
	}
}

// Relay posts what the consumer receives.
type Relay struct{ C *http.Client }

// Run reads Start's channel.
func (r *Relay) Run(ctx context.Context, c *Consumer) {
	for b := range c.Start(ctx) {
		_, _ = r.C.Post("https://bots.example.com/send", "application/json", bytes.NewReader(b))
	}
}
