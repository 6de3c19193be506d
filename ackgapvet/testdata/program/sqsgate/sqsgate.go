// Package sqsgate is an SQS gateway behind an interface whose methods have
// value receivers, returned as a pointer (wave 33, organic-cache's
// gateway.SQSGateway): the interface calls reach the methods through Go's
// synthetic pointer wrappers.
package sqsgate

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Gateway receives and deletes.
type Gateway interface {
	ReceiveMessage(ctx context.Context) (*sqs.ReceiveMessageOutput, error)
	Delete(ctx context.Context, handle *string) error
}

type client struct{ c *sqs.Client }

// New returns the gateway: a pointer in the interface.
func New(c *sqs.Client) Gateway { return &client{c: c} }

func (g client) ReceiveMessage(ctx context.Context) (*sqs.ReceiveMessageOutput, error) {
	return g.c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
}

func (g client) Delete(ctx context.Context, handle *string) error {
	_, err := g.c.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: handle})
	return err
}
