// Package sqspoller is a stub of an SQS consumer library (as
// ca-risken/go-sqs-poller and Wattpad/sqsconsumer): its loop receives,
// calls the handler and deletes the message when the handler returns nil.
package sqspoller

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Handler handles one message.
type Handler interface {
	HandleMessage(ctx context.Context, m *sqs.Message) error
}

// HandlerFunc handles one message's body.
type HandlerFunc func(ctx context.Context, body string) error

// Worker runs the loop.
type Worker struct{ c *sqs.Client }

// Start receives and handles until ctx ends.
func (w *Worker) Start(ctx context.Context, h Handler) {}

// NewConsumer makes a consumer for a body handler.
func NewConsumer(c *sqs.Client, h HandlerFunc) *Worker { return &Worker{c: c} }
