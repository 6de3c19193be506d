// Package generic is an SQS receive loop written as a method of a generic
// type: its instance has no package of its own in SSA, only its origin.
package generic

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Consumer receives messages of kind M.
type Consumer[M any] struct {
	c   *sqs.Client
	url string
	h   *http.Client
}

// New makes a consumer.
func New[M any](c *sqs.Client, url string, h *http.Client) *Consumer[M] {
	return &Consumer[M]{c: c, url: url, h: h}
}

// Start receives, posts each message, and deletes it.
func (g *Consumer[M]) Start(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := g.c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &g.url})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if _, err := g.h.Post("https://hooks.example.com/in", "text/plain", strings.NewReader(*m.Body)); err != nil {
				continue
			}
			_, _ = g.c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &g.url, ReceiptHandle: m.ReceiptHandle})
		}
	}
}
