// Package autocommitassign sets the reader's GroupID after the literal
// (wave 15, sources-api-go): the reader is in a group, and ReadMessage
// commits as it returns.
package autocommitassign

import (
	"context"
	"database/sql"

	"github.com/segmentio/kafka-go"
)

func consume(ctx context.Context, db *sql.DB, group string) {
	cfg := kafka.ReaderConfig{Brokers: []string{"k:9092"}, Topic: "status"}
	if group != "" {
		cfg.GroupID = group
	}
	r := kafka.NewReader(cfg)
	for {
		m, err := r.ReadMessage(ctx) // want `ReadMessage commits the offset as it returns \(reader with a GroupID\), before the work`
		if err != nil {
			return
		}
		if _, err := db.ExecContext(ctx, "UPDATE sources SET status = $1", string(m.Value)); err != nil {
			return
		}
	}
}
