// Package result builds Lambda partial batch responses for the handlers
// of package batchres.
package result

import (
	"errors"

	"github.com/aws/aws-lambda-go/events"
)

// BatchResult is the handlers' partial batch response.
type BatchResult struct {
	BatchItemFailures []events.SQSBatchItemFailure
}

// Joined names the failed records and joins their errors: with a non-nil
// error Lambda ignores the response and retries the whole batch.
func Joined(failed []string, errs []error) (*BatchResult, error) {
	r := make([]events.SQSBatchItemFailure, 0, len(failed))
	for _, id := range failed {
		r = append(r, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	return &BatchResult{BatchItemFailures: r}, errors.Join(errs...)
}

// Only names the failed records, with a nil error.
func Only(failed []string) (*BatchResult, error) {
	r := make([]events.SQSBatchItemFailure, 0, len(failed))
	for _, id := range failed {
		r = append(r, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	return &BatchResult{BatchItemFailures: r}, nil
}
