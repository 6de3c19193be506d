// Package wmloop ranges over a Watermill subscription without a router
// (field trial, wave 41: go42's Kafka, NATS and AMQP loops): one nacks
// every failure without end, the other counts the attempts and gives up.
package wmloop

import (
	"context"
	"database/sql"
	"strconv"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Sub subscribes to a topic (a Watermill Subscriber's method).
type Sub interface {
	Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error)
}

// Users stores each user and nacks a failure, for ever.
func Users(ctx context.Context, sub Sub, db *sql.DB) error {
	msgs, err := sub.Subscribe(ctx, "users")
	if err != nil {
		return err
	}
	for m := range msgs {
		if _, err := db.ExecContext(ctx, "UPDATE users SET name = $1 WHERE id = $2", string(m.Payload), m.UUID); err != nil {
			m.Nack()
			continue
		}
		m.Ack()
	}
	return nil
}

// Accounts nacks a failure three times, then gives up on it.
func Accounts(ctx context.Context, sub Sub, db *sql.DB) error {
	msgs, err := sub.Subscribe(ctx, "accounts")
	if err != nil {
		return err
	}
	for m := range msgs {
		if _, err := db.ExecContext(ctx, "UPDATE accounts SET name = $1 WHERE id = $2", string(m.Payload), m.UUID); err != nil {
			if n, _ := strconv.Atoi(m.Metadata["attempts"]); n < 3 {
				m.Nack()
				continue
			}
		}
		m.Ack()
	}
	return nil
}
