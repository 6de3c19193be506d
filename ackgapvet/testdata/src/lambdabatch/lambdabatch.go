package lambdabatch

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/events"
)

func process(r events.SQSMessage) error {
	if r.Body == "" {
		return errors.New("empty")
	}
	return nil
}

func handleAll(ctx context.Context, ev events.SQSEvent) error {
	for _, r := range ev.Records {
		if err := process(r); err != nil {
			return err // want `medium: returning an error for one record fails the whole SQS batch`
		}
	}
	return nil
}

// handlePartial reports batch item failures: clean.
func handlePartial(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		if err := process(r); err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return resp, nil
}
