// Package kgoiface polls franz-go through the application's own interface
// over *kgo.Client (field trial wave 6, conduit-connector-kafka).
package kgoiface

import (
	"context"
	"database/sql"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Client is the part of *kgo.Client the source uses.
type Client interface {
	PollFetches(ctx context.Context) kgo.Fetches
}

func newClient() (*kgo.Client, error) {
	return kgo.NewClient(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders")) // want `kgo.NewClient with a consumer group and no kgo.DisableAutoCommit: autocommit commits what an earlier poll returned on a timer, and the poll loop hands records to other goroutines`
}

func read(ctx context.Context, c Client, db *sql.DB) {
	for {
		fetches := c.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			go func() { _, _ = db.ExecContext(ctx, "INSERT INTO orders VALUES ($1)", r.Value) }()
		})
	}
}
