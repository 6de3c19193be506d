// Package autocommitgreedy sets kgo.AutoCommitGreedy: autocommit commits
// what each poll returned, before the loop's work.
package autocommitgreedy

import (
	"context"
	"database/sql"

	"github.com/twmb/franz-go/pkg/kgo"
)

func franz(ctx context.Context, db *sql.DB) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("g"), kgo.AutoCommitGreedy()) // want `kgo.AutoCommitGreedy commits what each poll returned on a timer, before the work`
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
