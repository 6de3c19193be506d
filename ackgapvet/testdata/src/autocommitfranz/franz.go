// Package autocommitfranz hands each polled record to a worker goroutine
// under franz-go's default autocommit: the next poll's autocommit may
// commit records a worker has not finished.
package autocommitfranz

import (
	"context"
	"database/sql"

	"github.com/twmb/franz-go/pkg/kgo"
)

func franz(ctx context.Context, db *sql.DB) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders")) // want `kgo.NewClient with a consumer group and no kgo.DisableAutoCommit: autocommit commits what an earlier poll returned on a timer, and the poll loop hands records to other goroutines \(franz.go:\d+\)`
	if err != nil {
		return err
	}
	jobs := make(chan *kgo.Record)
	go func() {
		for r := range jobs {
			_, _ = db.ExecContext(ctx, "UPDATE orders SET state = 'seen' WHERE id = $1", r.Value)
		}
	}()
	for {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			_, _ = db.ExecContext(ctx, "INSERT INTO seen VALUES ($1)", r.Value)
			jobs <- r
		})
	}
}
