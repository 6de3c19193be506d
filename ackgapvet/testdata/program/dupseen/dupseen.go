// Package dupseen records each event with a plain INSERT whose
// unique-key failure is read as "seen" (the MySQL style of an inbox): the
// checks take it for the consumer's dedupe record, and so does the map.
package dupseen

import (
	"context"
	"database/sql"
	"strings"

	"github.com/segmentio/kafka-go"
)

// Orders consumes orders.
func Orders(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if first(ctx, db, string(m.Value[:8])) {
			_, _ = db.ExecContext(ctx, "INSERT INTO lines (body) VALUES ($1)", string(m.Value))
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// first records the event; a duplicate key means it was seen.
func first(ctx context.Context, db *sql.DB, id string) bool {
	_, err := db.ExecContext(ctx, "INSERT INTO inbox (consumer, id) VALUES ('orders', $1)", id)
	return err == nil || !isDup(err)
}

func isDup(err error) bool { return strings.Contains(err.Error(), "1062") }
