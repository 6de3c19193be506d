// Package earlyackvendor imports the SQS client from its own vendor
// directory, as a GOPATH build does (wave 19, remind101/empire): the
// package path is earlyackvendor/vendor/github.com/aws/..., still the SDK.
package earlyackvendor

import (
	"context"
	"database/sql"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func poll(ctx context.Context, c *sqs.Client, db *sql.DB, url *string) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
		if err != nil {
			return
		}
		for _, m := range out.Messages {
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}) // want `acks with sqs.Client.DeleteMessage before the work`
			_, _ = db.ExecContext(ctx, "INSERT INTO stacks (body) VALUES ($1)", *m.Body)
		}
	}
}
