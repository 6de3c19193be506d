package sqsbroker_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/aws/aws-lambda-go/events"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// A Lambda function behind an SQS event source mapping with
// ReportBatchItemFailures: the router's chain (inbox, retries,
// dead-letter) runs each record, and only the records that failed are
// returned to the queue. In main, pass handler to lambda.Start.
func ExampleLambdaHandler() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqsbroker-example")
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "app.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		panic(err)
	}
	dead := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{}) // in production: sqsbroker.NewDeadLetterPublisher
	defer dead.Close()
	r, err := router.New[*sql.Tx](store, &router.Config{DeadLetter: dead})
	if err != nil {
		panic(err)
	}

	databaseDown := true
	chain, err := r.Chain("orders", func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		if id == "E3" && databaseDown {
			return fmt.Errorf("orders database: %w", ackgap.ErrStoreUnavailable)
		}
		fmt.Println("applied", id)
		return nil
	})
	if err != nil {
		panic(err)
	}
	handler, err := sqsbroker.LambdaHandler(chain, nil)
	if err != nil {
		panic(err)
	}

	invoke := func(path string) {
		raw, _ := os.ReadFile(path)
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			panic(err)
		}
		resp, err := handler(ctx, ev)
		if err != nil {
			panic(err)
		}
		eventIDs := map[string]string{}
		for _, rec := range ev.Records {
			eventIDs[rec.MessageId] = *rec.MessageAttributes["event_id"].StringValue
		}
		var failed []string
		for _, f := range resp.BatchItemFailures {
			failed = append(failed, eventIDs[f.ItemIdentifier])
		}
		fmt.Println("batchItemFailures:", failed)
	}
	invoke("testdata/sqs_event_s12.json")
	databaseDown = false
	invoke("testdata/sqs_event_s12_redelivered.json") // the whole batch again: only E3 runs
	// Output:
	// applied E1
	// applied E2
	// applied E4
	// applied E5
	// batchItemFailures: [E3]
	// applied E3
	// batchItemFailures: []
}
