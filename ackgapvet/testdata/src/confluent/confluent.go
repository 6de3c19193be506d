package confluent

import (
	"context"
	"database/sql"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// readLoop leaves auto-commit on (the default): flagged where the consumer
// is made.
func readLoop(ctx context.Context, db *sql.DB) error {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": "k:9092", "group.id": "payments"}) // want `critical: kafka.NewConsumer with "enable.auto.commit" on \(the default\) commits polled offsets in the background, before the poll loop's work \(a database write \(sql.DB.ExecContext\) at line \d+\) is done`
	if err != nil {
		return err
	}
	for {
		msg, err := c.ReadMessage(time.Second)
		if err != nil {
			continue
		}
		_, _ = db.ExecContext(ctx, "INSERT INTO payments VALUES ($1)", msg.Value)
	}
}

// pollLoop's config is a variable set to true: flagged too.
func pollLoop(ctx context.Context, db *sql.DB) error {
	cfg := &kafka.ConfigMap{"group.id": "payments", "enable.auto.commit": true}
	c, err := kafka.NewConsumer(cfg) // want `kafka.NewConsumer with "enable.auto.commit" on`
	if err != nil {
		return err
	}
	for {
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			_, _ = db.ExecContext(ctx, "INSERT INTO payments VALUES ($1)", e.Value)
		}
	}
}

// manual commits after the work with auto-commit off: clean.
func manual(ctx context.Context, db *sql.DB) error {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"group.id": "payments", "enable.auto.commit": false})
	if err != nil {
		return err
	}
	for {
		msg, err := c.ReadMessage(-1)
		if err != nil {
			continue
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO payments VALUES ($1)", msg.Value); err != nil {
			continue
		}
		_, _ = c.CommitMessage(msg)
	}
}

// stored turns the offset store off and stores after the work: clean.
func stored(ctx context.Context, db *sql.DB) error {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"group.id": "payments", "enable.auto.offset.store": "false"})
	if err != nil {
		return err
	}
	for {
		msg, err := c.ReadMessage(-1)
		if err != nil {
			continue
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO payments VALUES ($1)", msg.Value); err == nil {
			_, _ = c.StoreMessage(msg)
		}
	}
}

// elsewhere gets its config from a parameter: unknown, clean.
func elsewhere(cfg *kafka.ConfigMap) (*kafka.Consumer, error) { return kafka.NewConsumer(cfg) }
