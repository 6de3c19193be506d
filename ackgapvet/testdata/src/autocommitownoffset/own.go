// Package autocommitownoffset reads without a group from the offset it
// stored with its last write: not reported.
package autocommitownoffset

import (
	"context"
	"database/sql"

	"github.com/segmentio/kafka-go"
)

func resume(ctx context.Context, db *sql.DB) error {
	var next int64
	if err := db.QueryRowContext(ctx, "SELECT next_offset FROM positions WHERE topic = 'ledger'").Scan(&next); err != nil {
		return err
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{"k:9092"}, Topic: "ledger"})
	if err := r.SetOffset(next); err != nil {
		return err
	}
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, "UPDATE positions SET next_offset = $1 WHERE topic = 'ledger'", string(m.Value)); err != nil {
			return err
		}
	}
}
