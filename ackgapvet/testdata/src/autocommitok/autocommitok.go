// Package autocommitok holds the look-alikes of autocommit's commit before
// the work: a kafka-go reader without a group (which commits nothing, and is
// reported for that instead: every restart reads the partition again),
// franz-go with auto-commit disabled.
package autocommitok

import (
	"context"
	"database/sql"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

func readLoop(ctx context.Context, db *sql.DB) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{"k:9092"}, Topic: "payments"}) // want `kafka-go ReaderConfig without a GroupID, read in a loop: the reader commits no offset and starts at its first offset on every start`
	for {
		m, err := r.ReadMessage(ctx) // no GroupID: nothing is committed, so ReadMessage commits nothing before the work
		if err != nil {
			return
		}
		_, _ = db.ExecContext(ctx, "INSERT INTO payments VALUES ($1)", m.Value)
	}
}

func franz(ctx context.Context, db *sql.DB) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("g"), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	for {
		fetches := cl.PollFetches(ctx)
		var last *kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			_, _ = db.ExecContext(ctx, "UPDATE orders SET state = 'seen'")
			last = r
		})
		_ = cl.CommitRecords(ctx, last)
	}
}

// marks commits only what the loop marked: clean.
func marks(ctx context.Context, db *sql.DB) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("g"), kgo.AutoCommitMarks())
	if err != nil {
		return err
	}
	for {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			_, _ = db.ExecContext(ctx, "UPDATE orders SET state = 'seen'")
		})
	}
}
