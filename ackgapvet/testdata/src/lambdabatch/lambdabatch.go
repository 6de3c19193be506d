package lambdabatch

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

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

// failuresAndError fills the partial response and also returns an error
// (field trial wave 5, lambdafy H1): the whole batch is retried.
func failuresAndError(ctx context.Context, e events.SQSEvent) (resp events.SQSEventResponse, err error) {
	for _, rec := range e.Records {
		if _, err := http.Post("http://app.local/sqs", "text/plain", nil); err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	if len(resp.BatchItemFailures) > 0 {
		return resp, errors.New("some requests failed") // want `returns the batch item failures together with an error`
	}
	return resp, nil
}

// undecodable fails the whole batch on purpose, with an empty response.
func undecodable(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
	if len(e.Records) == 0 {
		return events.SQSEventResponse{}, errors.New("empty batch")
	}
	return events.SQSEventResponse{}, nil
}

// s3InOneMessage takes the first SQS record (a function with batch size 1)
// and loops over the S3 records inside it: an error there fails that one
// message, not a batch of others. Clean.
func s3InOneMessage(ctx context.Context, ev events.SQSEvent) error {
	var s3 events.S3Event
	if err := json.Unmarshal([]byte(ev.Records[0].Body), &s3); err != nil {
		return err
	}
	for _, r := range s3.Records {
		if r.Key == "" {
			return errors.New("no key")
		}
	}
	return nil
}

// handBuilt answers with its own map of batch item failures and the last
// record's error with it (wave 17, opg-use-an-lpa's event receiver): Lambda
// ignores the response and retries the whole batch.
func handBuilt(ctx context.Context, ev events.SQSEvent) (map[string]any, error) {
	var failures []map[string]string
	var err error
	for _, r := range ev.Records {
		if err = process(r); err != nil {
			failures = append(failures, map[string]string{"itemIdentifier": r.MessageId})
		}
	}
	return map[string]any{"batchItemFailures": failures}, err // want `returns the batch item failures together with an error`
}

// handBuiltClean answers with its own map and a nil error: clean.
func handBuiltClean(ctx context.Context, ev events.SQSEvent) (map[string]any, error) {
	resp := map[string]any{}
	var failures []map[string]string
	for _, r := range ev.Records {
		if err := process(r); err != nil {
			failures = append(failures, map[string]string{"itemIdentifier": r.MessageId})
		}
	}
	resp["batchItemFailures"] = failures
	return resp, nil
}

// handleOneEvent is called per record by handleEach, with a one-record
// event (wave 20, bolt-monitor's handleSQSEvent): handleEach is the Lambda
// handler, which lists the failed record; this one is not a handler.
func handleOneEvent(ctx context.Context, ev events.SQSEvent) error {
	for _, r := range ev.Records {
		if err := process(r); err != nil {
			return err
		}
	}
	return nil
}

// handleEach reports batch item failures: clean.
func handleEach(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		if err := handleOneEvent(ctx, events.SQSEvent{Records: []events.SQSMessage{r}}); err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return resp, nil
}
