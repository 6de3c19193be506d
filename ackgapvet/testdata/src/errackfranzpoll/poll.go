// Package errackfranzpoll skips a whole poll on its error under franz-go's
// auto-commit (field trial, wave 36: wbTestCase H1).
package errackfranzpoll

import (
	"context"
	"database/sql"
	"log"

	"github.com/twmb/franz-go/pkg/kgo"
)

func run(ctx context.Context, db *sql.DB) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("orders"), kgo.ConsumeTopics("orders"))
	if err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		if fs.IsClientClosed() || ctx.Err() != nil {
			continue // a closed client has no records: not reported
		}
		if err := fs.Err(); err != nil { // want `a poll whose fetches carry an error \(if err != nil\) is skipped whole \(continue\), and the client's auto-commit .* commits what the poll returned`
			log.Print(err)
			continue
		}
		fs.EachRecord(func(r *kgo.Record) {
			_, _ = db.ExecContext(ctx, "INSERT INTO orders(body) VALUES ($1) ON CONFLICT DO NOTHING", r.Value)
		})
	}
}

func handledAnyway(ctx context.Context, cl *kgo.Client, db *sql.DB) {
	for {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			log.Print(errs)
			fs.EachRecord(func(r *kgo.Record) { // the records are handled: not reported
				_, _ = db.ExecContext(ctx, "INSERT INTO orders(body) VALUES ($1) ON CONFLICT DO NOTHING", r.Value)
			})
			continue
		}
		fs.EachRecord(func(r *kgo.Record) {
			_, _ = db.ExecContext(ctx, "INSERT INTO orders(body) VALUES ($1) ON CONFLICT DO NOTHING", r.Value)
		})
	}
}
