package errack

import (
	"context"
	"database/sql"
	"errors"

	"github.com/segmentio/kafka-go"
)

var errDuplicateEvent = errors.New("duplicate event")

var errRetryLater = errors.New("retry later")

func reserve(ctx context.Context, db *sql.DB, m kafka.Message) error {
	_, err := db.ExecContext(ctx, "UPDATE stock SET reserved = reserved + 1 WHERE sku = $1", string(m.Value))
	return err
}

// dupFallsThrough acks a duplicate on purpose: every other failure is left
// for redelivery (a new user's report), so no finding.
func dupFallsThrough(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := reserve(ctx, db, m); err != nil && !errors.Is(err, errDuplicateEvent) {
			continue
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// retryFallsThrough acks the one failure it should retry.
func retryFallsThrough(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := reserve(ctx, db, m); err != nil && !errors.Is(err, errRetryLater) {
			continue
		}
		_ = r.CommitMessages(ctx, m) // want `acks with kafka.Reader.CommitMessages even when reserve failed \(line \d+\) unless !errors.Is\(err, errRetryLater\)`
	}
}
