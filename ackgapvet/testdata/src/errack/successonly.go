package errack

import (
	"context"
	"database/sql"
	"log"

	"github.com/aws/aws-lambda-go/events"
)

// Indexer writes a batch's appearances and chunks (field trial, wave 53:
// trueblocks-key): the first insert's failure is read only to log a
// success, then overwritten by the second insert's result.
type Indexer struct{ db *sql.DB }

func (x *Indexer) Handle(ctx context.Context, ev events.SQSEvent) (err error) {
	if len(ev.Records) > 0 {
		_, err = x.db.ExecContext(ctx, "INSERT INTO appearances (address) VALUES ($1)", ev.Records[0].Body) // want `the error of x.db.ExecContext is read only to test for success, then overwritten by x.db.ExecContext \(line 23\)`
		if err == nil {
			log.Println("appearances stored")
		}
	}
	_, err = x.db.ExecContext(ctx, "INSERT INTO chunks (range) VALUES ($1)", len(ev.Records))
	return
}

// Chained runs the second insert only when the first went well: nothing
// is lost.
func (x *Indexer) Chained(ctx context.Context, ev events.SQSEvent) (err error) {
	_, err = x.db.ExecContext(ctx, "INSERT INTO appearances (address) VALUES ($1)", ev.Records[0].Body)
	if err == nil {
		_, err = x.db.ExecContext(ctx, "INSERT INTO chunks (range) VALUES ($1)", len(ev.Records))
	}
	return err
}
