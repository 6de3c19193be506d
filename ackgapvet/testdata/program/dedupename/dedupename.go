// Package dedupename records each event in a processed_events row under the
// consumer's name before its work, in one transaction (a new user's
// consumer): the name, 'payments', is a value in the dedupe record, not a
// payment, so the record is a state write in the map, not money.
package dedupename

import (
	"context"
	"database/sql"

	"github.com/segmentio/kafka-go"
)

// Run claims, works and commits.
func Run(ctx context.Context, r *kafka.Reader, db *sql.DB) error {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO processed_events (consumer, event_id) VALUES ('payments', $1) ON CONFLICT DO NOTHING", string(m.Value))
		if err != nil {
			_ = tx.Rollback()
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			if _, err := tx.ExecContext(ctx, "UPDATE orders SET state = 'seen' WHERE id = $1", string(m.Value)); err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			return err
		}
	}
}
