// Package cdkiface receives with Go CDK's pubsub through the application's
// own interface over the subscription (field trial, wave 54: qid's copy of
// the method set, whose loop acked every trigger before its work).
package cdkiface

import (
	"context"
	"database/sql"
	"log"

	"gocloud.dev/pubsub"
)

// Subscriber is the application's interface over *pubsub.Subscription.
type Subscriber interface {
	Receive(ctx context.Context) (*pubsub.Message, error)
}

// Triggers acks each message as it arrives, then starts its build: a
// crash or a failed insert loses the trigger.
func Triggers(ctx context.Context, sub Subscriber, db *sql.DB) error {
	for {
		msg, err := sub.Receive(ctx)
		if err != nil {
			return err
		}
		msg.Ack()
		if _, err := db.ExecContext(ctx, "INSERT INTO builds (pipeline) VALUES ($1)", string(msg.Body)); err != nil {
			log.Printf("trigger: %v", err)
		}
	}
}

// Records acks each message after its insert, even when the insert failed.
func Records(ctx context.Context, sub Subscriber, db *sql.DB) error {
	for {
		msg, err := sub.Receive(ctx)
		if err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, "UPDATE builds SET seen = true WHERE pipeline = $1", string(msg.Body)); err != nil {
			log.Printf("record: %v", err)
		}
		msg.Ack()
	}
}
