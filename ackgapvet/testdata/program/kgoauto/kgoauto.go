// Package kgoauto evaluates rules from a franz-go consumer group that
// keeps the client's default auto-commit (field trial, wave 54: JL's rules
// evaluator): a failed evaluation is only logged, and the next
// auto-commit commits past it.
package kgoauto

import (
	"context"
	"database/sql"
	"log"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Evaluator stores each rule's result.
type Evaluator struct{ DB *sql.DB }

func (e *Evaluator) evaluate(ctx context.Context, v []byte) error {
	_, err := e.DB.ExecContext(ctx, "UPDATE rules SET state = $1 WHERE id = 1", string(v))
	return err
}

// Run polls and evaluates each record, logging a failure.
func (e *Evaluator) Run(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("rules"), kgo.ConsumeTopics("metrics"))
	if err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if err := e.evaluate(ctx, r.Value); err != nil {
				log.Printf("evaluate: %v", err)
			}
		})
	}
}

// RunSafe's own client turns the auto-commit off and commits after the
// work: quiet, and it does not hide Run's auto-commit (a new user's
// report: a safe twin's DisableAutoCommit in the same package hid it).
func (e *Evaluator) RunSafe(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("rules-safe"), kgo.ConsumeTopics("metrics"), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		for _, r := range fs.Records() {
			if err := e.evaluate(ctx, r.Value); err != nil {
				return err
			}
			if err := cl.CommitRecords(ctx, r); err != nil {
				return err
			}
		}
	}
}
