package confluentack

import (
	"context"
	"database/sql"
	"net/http"

	kafka "github.com/confluentinc/confluent-kafka-go/kafka"
)

// commitFirst commits before the write (v1 import path).
func commitFirst(ctx context.Context, c *kafka.Consumer, db *sql.DB) {
	for {
		msg, err := c.ReadMessage(-1)
		if err != nil {
			continue
		}
		_, _ = c.CommitMessage(msg) // want `critical: acks with kafka.Consumer.CommitMessage before the work \(a database write \(sql.DB.ExecContext\) at line \d+\)`
		_, _ = db.ExecContext(ctx, "INSERT INTO payments VALUES ($1)", msg.Value)
	}
}

// storeFirst stores the offset before the HTTP call in a Poll loop.
func storeFirst(c *kafka.Consumer, client *http.Client) {
	for {
		ev := c.Poll(100)
		msg, ok := ev.(*kafka.Message)
		if !ok {
			continue
		}
		_, _ = c.StoreOffsets([]kafka.TopicPartition{msg.TopicPartition}) // want `acks with kafka.Consumer.StoreOffsets before the work \(an HTTP request \(http.Client.Post\) at line \d+\)`
		_, _ = client.Post("http://ledger.local", "application/json", nil)
	}
}

// commitAfter: clean.
func commitAfter(ctx context.Context, c *kafka.Consumer, db *sql.DB) {
	for {
		msg, err := c.ReadMessage(-1)
		if err != nil {
			continue
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO payments VALUES ($1)", msg.Value); err == nil {
			_, _ = c.CommitMessage(msg)
		}
	}
}

// produce publishes: an effect, not an ack.
func produce(p *kafka.Producer, msg *kafka.Message) error { return p.Produce(msg, nil) }
