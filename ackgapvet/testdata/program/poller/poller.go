// Package poller is an SQS receive loop that hands each message to a pool
// of workers over a channel; the workers call a store through an interface.
package poller

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Store applies a message.
type Store interface {
	Apply(ctx context.Context, body string) error
}

// Poll receives and hands off; it deletes a message as soon as it is handed
// to a worker, before the worker ran.
func Poll(ctx context.Context, c *sqs.Client, url string, s Store) {
	work := make(chan sqs.Message)
	for range 4 {
		go worker(ctx, work, s)
	}
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			work <- m
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle})
		}
	}
}

func worker(ctx context.Context, work <-chan sqs.Message, s Store) {
	for m := range work {
		_ = s.Apply(ctx, *m.Body)
	}
}
