// Package gocdk receives with Go CDK's pubsub over SQS (wave 15, outpost):
// the receive loop is a consumer and msg.Ack() its ack.
package gocdk

import (
	"context"
	"database/sql"
	"log"

	"gocloud.dev/pubsub"
)

func deliver(ctx context.Context, sub *pubsub.Subscription, db *sql.DB) error {
	for {
		msg, err := sub.Receive(ctx)
		if err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, "UPDATE deliveries SET attempts = attempts + 1 WHERE id = $1", string(msg.Body)); err != nil {
			log.Printf("deliver: %v", err)
		}
		msg.Ack() // want `acks with pubsub.Message.Ack even when db.ExecContext failed`
	}
}
