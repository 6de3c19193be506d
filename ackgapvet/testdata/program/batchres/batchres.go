// Package batchres answers Lambda SQS batches with a response that a
// helper of another package builds (field trial, wave 48: GreenFlag's
// middleware.GetBatchResult): one helper joins the records' errors into
// the error it returns beside the failures, so the whole batch comes back;
// the twin's helper returns a nil error.
package batchres

import (
	"context"
	"database/sql"

	"github.com/aws/aws-lambda-go/events"

	"example.com/program/batchres/result"
)

// H stores transactions.
type H struct{ DB *sql.DB }

func (h *H) store(ctx context.Context, ev events.SQSEvent) ([]string, []error) {
	var failed []string
	var errs []error
	for _, r := range ev.Records {
		if _, err := h.DB.ExecContext(ctx, "UPDATE accounts SET seen = true WHERE id = $1", r.Body); err != nil {
			failed = append(failed, r.MessageId)
			errs = append(errs, err)
		}
	}
	return failed, errs
}

// Transactions answers with the joined errors.
func (h *H) Transactions(ctx context.Context, ev events.SQSEvent) (*result.BatchResult, error) {
	failed, errs := h.store(ctx, ev)
	return result.Joined(failed, errs)
}

// Replies answers with the failures only.
func (h *H) Replies(ctx context.Context, ev events.SQSEvent) (*result.BatchResult, error) {
	failed, _ := h.store(ctx, ev)
	return result.Only(failed)
}
