// Package kinesisscan consumes a Kinesis stream with harlow/kinesis-consumer
// (field trial wave 13, watchops H2, H3): the Scan callback is the entry
// point, and the library checkpoints a record when it returns nil.
package kinesisscan

import (
	"context"
	"database/sql"
	"encoding/json"
	"log"

	consumer "github.com/harlow/kinesis-consumer"
)

type event struct{ ID string }

func run(ctx context.Context, c *consumer.Consumer, db *sql.DB) error {
	return c.Scan(ctx, func(r *consumer.Record) error {
		var e event
		if err := json.Unmarshal(r.Data, &e); err != nil {
			return err // want `returns an error from the Scan callback when json.Unmarshal fails .*Scan stops at it`
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO events VALUES ($1)", e.ID); err != nil {
			log.Println(err)
			return nil
		}
		return nil
	})
}
