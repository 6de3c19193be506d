// Package lambdasetup opens its database inside a Lambda SQS handler and
// ends the process when that fails (field trial, wave 49:
// abi-sql-view-generator's Snowflake DSN and sql.Open): a dependency's
// failure, given nothing of the event, not a message that always fails.
// Ending the process on a record that does not decode is poison.
package lambdasetup

import (
	"context"
	"database/sql"
	"encoding/json"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/events"
)

// Row is a record's payload.
type Row struct{ ID string }

// Handler stores each record's row.
func Handler(ctx context.Context, ev events.SQSEvent) error {
	db, err := sql.Open("postgres", os.Getenv("DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, r := range ev.Records {
		var row Row
		if err := json.Unmarshal([]byte(r.Body), &row); err != nil {
			log.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "UPDATE rows SET seen = true WHERE id = $1", row.ID); err != nil {
			return err
		}
	}
	return nil
}
