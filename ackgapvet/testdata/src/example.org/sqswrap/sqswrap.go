// Package sqswrap is a stub of an SQS client wrapper library (as
// GeoNet/kit's aws/sqs): Receive returns one message, Delete deletes it by
// its receipt handle.
package sqswrap

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Raw is a received message.
type Raw struct {
	Body, ReceiptHandle string
}

// SQS wraps the client.
type SQS struct{ c *sqs.Client }

// ReceiveWithContext receives one message, waiting up to 20 s.
func (s *SQS) ReceiveWithContext(ctx context.Context, queueURL string, visibilityTimeout int32) (Raw, error) {
	return Raw{}, nil
}

// Delete deletes a message by its receipt handle.
func (s *SQS) Delete(queueURL, receiptHandle string) error { return nil }
