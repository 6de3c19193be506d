// Package store saves totals through a library that retries its function
// before returning (as gorm's Transaction or pgx.BeginFunc call theirs).
package store

import (
	"context"
	"database/sql"

	"example.org/retry"
	"github.com/segmentio/kafka-go"
)

// Totals saves totals.
type Totals struct{ DB *sql.DB }

// Save writes v, retried by the library.
func (t *Totals) Save(ctx context.Context, v []byte) error {
	return retry.Do(ctx, func() error {
		_, err := t.DB.ExecContext(ctx, "INSERT INTO totals (v) VALUES ($1) ON CONFLICT DO NOTHING", v)
		return err
	})
}

// DeadLetters publishes failed messages.
type DeadLetters struct{ W *kafka.Writer }

// SendToDLQ publishes m to the dead-letter topic.
func (d *DeadLetters) SendToDLQ(ctx context.Context, m kafka.Message, err error) error {
	return d.W.WriteMessages(ctx, m)
}
