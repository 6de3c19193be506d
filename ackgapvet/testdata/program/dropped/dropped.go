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
