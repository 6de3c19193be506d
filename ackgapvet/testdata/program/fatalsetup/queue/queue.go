// Package queue receives and processes one batch of SQS messages per
// call (field trial, wave 33: video-api's ProcessMessages).
package queue

import (
	"context"
	"database/sql"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Worker processes a queue.
type Worker struct {
	C  *sqs.Client
	DB *sql.DB
}

// ProcessMessages receives a batch, writes each and deletes it.
func (w *Worker) ProcessMessages(ctx context.Context, url *string) error {
	out, err := w.C.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
	if err != nil {
		return err
	}
	for _, m := range out.Messages {
		if _, err := w.DB.ExecContext(ctx, "UPDATE videos SET state = 'done' WHERE id = $1", *m.Body); err != nil {
			continue
		}
		_, _ = w.C.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
	}
	return nil
}
