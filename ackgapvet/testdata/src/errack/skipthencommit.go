package errack

import (
	"context"
	"database/sql"
	"log"

	"github.com/twmb/franz-go/pkg/kgo"
)

// processFetch skips a record whose write failed and commits the last good
// one after the loop (wave 15, apm-queue H1): the commit passes over it.
func processFetch(ctx context.Context, cl *kgo.Client, db *sql.DB) {
	for {
		fs := cl.PollFetches(ctx)
		recs := fs.Records()
		last := -1
		for i, rec := range recs {
			if _, err := db.ExecContext(ctx, "INSERT INTO spans (body) VALUES ($1)", rec.Value); err != nil { // want `a record whose db.ExecContext fails is skipped \(continue\), and the kgo.Client.CommitRecords after the loop commits a later offset`
				log.Printf("process: %v", err)
				continue
			}
			last = i
		}
		if last >= 0 {
			_ = cl.CommitRecords(ctx, recs[last])
		}
	}
}
