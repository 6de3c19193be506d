// Package kinesisscanack returns nil from a kinesis-consumer Scan callback
// when its write failed: the record is checkpointed and lost.
package kinesisscanack

import (
	"context"
	"database/sql"
	"log"

	consumer "github.com/harlow/kinesis-consumer"
)

func run(ctx context.Context, c *consumer.Consumer, db *sql.DB) error {
	return c.Scan(ctx, func(r *consumer.Record) error {
		if _, err := db.ExecContext(ctx, "INSERT INTO events VALUES ($1)", r.Data); err != nil {
			log.Println(err)
			return nil // want `returns without an error when db.ExecContext fails .*the kinesis-consumer Scan callback acks the message`
		}
		return nil
	})
}
