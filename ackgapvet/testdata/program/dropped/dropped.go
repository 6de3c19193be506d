// Package dropped writes with its error dropped unread before the commit
// (wave 17, ovh/cds's hooks: SaveTaskExecution then MarkMessage).
package dropped

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/segmentio/kafka-go"
)

// Run drops the insert's error, then commits; the body close is no work.
func Run(ctx context.Context, r *kafka.Reader, db *sql.DB, c *http.Client) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		db.ExecContext(ctx, "INSERT INTO executions (body) VALUES ($1) ON CONFLICT DO NOTHING", m.Value)
		if resp, err := c.Get("https://status.example/ping"); err == nil {
			_ = resp.Body.Close()
		}
		_ = r.CommitMessages(ctx, m)
	}
}

func flush(ctx context.Context, db *sql.DB, rows [][]byte) error {
	for _, r := range rows {
		if _, err := db.ExecContext(ctx, "INSERT INTO events (body) VALUES ($1) ON CONFLICT DO NOTHING", r); err != nil {
			return err
		}
	}
	return nil
}

// RunBatch drops the flush's error on shutdown and commits when it has
// something to commit (wave 26, Sentry H3): the commit alone in an if.
func RunBatch(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	var rows [][]byte
	var last kafka.Message
	pending := false
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			flush(context.Background(), db, rows)
			if pending {
				_ = r.CommitMessages(context.Background(), last)
			}
			return
		}
		rows, last, pending = append(rows, m.Value), m, true
	}
}
