// Package sqsiface is an aws-sdk-go-v2 receive loop written against the
// application's own interface over *sqs.Client (the SDK ships none): the
// receive and the delete are SQS calls all the same.
package sqsiface

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// API is the subset of *sqs.Client the worker uses, stubbed in tests.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

type Worker struct {
	Queue API
	URL   *string
}

func (w *Worker) Run(ctx context.Context) {
	for {
		out, err := w.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: w.URL})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			_, _ = w.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: w.URL, ReceiptHandle: m.ReceiptHandle}) // want `acks with sqsiface.API.DeleteMessage before the work \(an HTTP request \(http.Post\)`
			_, _ = http.Post("http://hooks.local/", "text/plain", nil)
		}
	}
}
