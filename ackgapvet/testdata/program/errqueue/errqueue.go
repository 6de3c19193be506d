// Package errqueue sends a failed SQS message to an error queue named in
// its configuration (field trial, wave 41: wecredit's AwsErrorQueueUrl):
// a second copy of one failure is noise, not an effect; the forward of a
// processed message to the next queue is one.
package errqueue

import (
	"context"
	"database/sql"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Config names the queues.
type Config struct{ InQueueURL, ErrorQueueURL, ShippingQueueURL string }

// W moves orders on.
type W struct {
	Q   *sqs.Client
	DB  *sql.DB
	Cfg Config
}

// Run marks each order sent and forwards it, or copies it to the error
// queue when the update failed.
func (w *W) Run(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := w.Q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &w.Cfg.InQueueURL})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if _, err := w.DB.ExecContext(ctx, "UPDATE orders SET state = 'sent' WHERE id = $1", *m.Body); err != nil {
				_, _ = w.Q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &w.Cfg.ErrorQueueURL, MessageBody: m.Body})
			} else {
				_, _ = w.Q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &w.Cfg.ShippingQueueURL, MessageBody: m.Body})
			}
			_, _ = w.Q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &w.Cfg.InQueueURL, ReceiptHandle: m.ReceiptHandle})
		}
	}
}
