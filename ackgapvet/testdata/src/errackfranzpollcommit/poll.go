// Package errackfranzpollcommit commits polled offsets itself: a skipped
// poll is committed by CommitUncommittedOffsets, one committed record by
// record is not.
package errackfranzpollcommit

import (
	"context"
	"database/sql"
	"log"

	"github.com/twmb/franz-go/pkg/kgo"
)

func run(ctx context.Context, db *sql.DB) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("orders"), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 { // want `a poll whose fetches carry an error \(if len\(errs\) > 0\) is skipped whole \(continue\), and CommitUncommittedOffsets commits what the poll returned`
			log.Print(errs)
			continue
		}
		for _, r := range fs.Records() {
			if _, err := db.ExecContext(ctx, "INSERT INTO orders(body) VALUES ($1) ON CONFLICT DO NOTHING", r.Value); err != nil {
				return err
			}
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			return err
		}
	}
}

func recordByRecord(ctx context.Context, cl *kgo.Client, db *sql.DB) error {
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			log.Print(err)
			continue // nothing of this poll is committed: not reported
		}
		for _, r := range fs.Records() {
			if _, err := db.ExecContext(ctx, "INSERT INTO orders(body) VALUES ($1) ON CONFLICT DO NOTHING", r.Value); err != nil {
				return err
			}
			if err := cl.CommitRecords(ctx, r); err != nil {
				return err
			}
		}
	}
}
