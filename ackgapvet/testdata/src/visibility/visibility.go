package visibility

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func poll(ctx context.Context, c *sqs.Client) {
	for {
		out, _ := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{VisibilityTimeout: 30}) // want `medium: VisibilityTimeout 30s is under six times the handler timeout 10s: .*; use at least 60s`
		for _, m := range out.Messages {
			process(ctx, m)
		}
		out, _ = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{VisibilityTimeout: 60}) // clean
		_ = out
	}
}

func process(ctx context.Context, m sqs.Message) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = ctx
}
