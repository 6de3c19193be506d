// Package queue is a repository's shared SQS receive loop, in a module of
// its own that each service's go.mod replaces with a relative path (field
// trial, wave 21: E-Commerce-backend's pkg/aws).
package queue

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Consumer polls one queue.
type Consumer struct {
	Client *sqs.Client
	URL    string
}

// StartPolling hands each body to handler and deletes it when handler
// returns nil.
func (c *Consumer) StartPolling(ctx context.Context, handler func(ctx context.Context, body string) error) {
	for ctx.Err() == nil {
		out, err := c.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &c.URL})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if err := handler(ctx, *m.Body); err != nil {
				continue
			}
			_, _ = c.Client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &c.URL, ReceiptHandle: m.ReceiptHandle})
		}
	}
}
