// Package errlog dead-letters a failed message, and when the dead-letter
// publish fails it only logs, through the application's own logger, a
// line that names the DLQ (field trial, wave 30: topos H1): the log line
// is no send, and the next commit passes over the message.
package errlog

import (
	"context"
	"database/sql"

	"github.com/segmentio/kafka-go"

	"errlog/logger"
)

func consume(ctx context.Context, r *kafka.Reader, dlq *kafka.Writer, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if _, err := db.ExecContext(ctx, "UPDATE stock SET n = n - 1"); err != nil {
			if err := dlq.WriteMessages(ctx, m); err != nil { // want `a message whose dlq.WriteMessages fails is not acked but the loop goes on.*the next message's kafka.Reader.CommitMessages commits past it`
				logger.Error("Failed to publish to DLQ", "error", err)
				continue
			}
		}
		_ = r.CommitMessages(ctx, m)
	}
}
