// Package lambdafan is a Lambda SQS handler that writes each record in a
// goroutine of its own and waits for them all before it returns: the
// return (the ack) waits for the writes, and the map says so.
package lambdafan

import (
	"context"
	"database/sql"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// Fan writes readings.
type Fan struct{ db *sql.DB }

// Handle writes every record, then answers.
func (f *Fan) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		wg.Add(1)
		go func(r events.SQSMessage) {
			defer wg.Done()
			if _, err := f.db.ExecContext(ctx, "UPDATE readings SET v = $1 WHERE id = 1", r.Body); err != nil {
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
				mu.Unlock()
			}
		}(r)
	}
	wg.Wait()
	return resp, nil
}

// Main starts the Lambda.
func Main(f *Fan) { lambda.Start(f.Handle) }
