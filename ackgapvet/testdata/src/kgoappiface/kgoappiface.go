// Package kgoappiface holds its franz-go client behind the application's
// own interface (field trial wave 13, hexagonal-fastcampus-pay): the
// interface's MarkCommitRecords is an offset mark and its ProduceSync a
// publish, as the client's are.
package kgoappiface

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

// consume marks each record before its insert.
func consume(ctx context.Context, c KafkaClient, db *sql.DB) {
	for {
		fs := c.PollFetches(ctx)
		for i := range fs {
			r := &fs[i]
			c.MarkCommitRecords(r) // want `acks with kgoappiface.KafkaClient.MarkCommitRecords before the work \(a database write`
			_, _ = db.ExecContext(ctx, "INSERT INTO money VALUES ($1)", r.Value)
		}
	}
}
