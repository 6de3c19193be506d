package errack

import (
	"context"
	"database/sql"
	"log"

	"github.com/segmentio/kafka-go"
)

// switchErr assigns the work's error in the cases of a switch and tests it
// after (field trial wave 13, screwdriver H1): the failure is logged and
// the commit after it acks the message anyway.
func switchErr(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		switch string(m.Value) {
		case "start":
			_, err = db.ExecContext(ctx, "UPDATE builds SET state = 'running'")
		case "stop":
			_, err = db.ExecContext(ctx, "UPDATE builds SET state = 'stopped'")
		}
		if err != nil {
			log.Println(err)
		}
		_ = r.CommitMessages(ctx, m) // want `acks with kafka.Reader.CommitMessages even when db.ExecContext failed`
	}
}
