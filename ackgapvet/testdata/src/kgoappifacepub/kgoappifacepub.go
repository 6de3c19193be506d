// Package kgoappifacepub publishes through the application's own
// interface over a franz-go client: its ProduceSync is a publish.
package kgoappifacepub

import (
	"context"
	"database/sql"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaClient is the part of *kgo.Client the service uses.
type KafkaClient interface {
	PollFetches(ctx context.Context) kgo.Fetches
	MarkCommitRecords(rs ...*kgo.Record)
	ProduceSync(ctx context.Context, rs ...*kgo.Record) struct{}
}

// reply publishes through the interface after the write: the publish
// repeats on a redelivery.
func reply(ctx context.Context, c KafkaClient, db *sql.DB) {
	for {
		fs := c.PollFetches(ctx)
		for i := range fs {
			r := &fs[i]
			_, _ = db.ExecContext(ctx, "UPDATE money SET n = n + 1")
			c.ProduceSync(ctx, &kgo.Record{Value: r.Value}) // want `a publish \(kgoappifacepub.KafkaClient.ProduceSync\)`
			c.MarkCommitRecords(r)
		}
	}
}
