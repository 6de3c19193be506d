// Package sqsiface is a stub of aws-sdk-go v1's SQS interface.
package sqsiface

import (
	"context"

	"github.com/aws/aws-sdk-go/service/sqs"
)

type SQSAPI interface {
	ReceiveMessageWithContext(ctx context.Context, in *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageWithContext(ctx context.Context, in *sqs.DeleteMessageInput) (*sqs.DeleteMessageOutput, error)
	ReceiveMessage(in *sqs.ReceiveMessageInput) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(in *sqs.DeleteMessageInput) (*sqs.DeleteMessageOutput, error)
}
