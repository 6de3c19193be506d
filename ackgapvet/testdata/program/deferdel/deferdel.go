// Package deferdel deletes each message in a deferred call: the delete
// runs when the handler returns, after its write (a new user's consumer,
// wave 21's walk), so the map must not put the write after the ack.
package deferdel

import (
	"context"
	"database/sql"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func handle(ctx context.Context, c *sqs.Client, db *sql.DB, m sqs.Message) error {
	defer c.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: m.ReceiptHandle})
	_, err := db.Exec("UPDATE accounts SET verified = true WHERE id = $1", *m.Body)
	return err
}

// Drain receives and handles.
func Drain(ctx context.Context, c *sqs.Client, db *sql.DB) {
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			_ = handle(ctx, c, db, m)
		}
	}
}
