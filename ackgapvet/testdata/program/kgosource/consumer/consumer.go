// Package consumer runs jobs from a source and commits after each batch.
package consumer

import (
	"context"
	"database/sql"
	"log"

	"example.com/program/kgosource"
)

// Source gives batches of jobs and commits them.
type Source interface {
	Poll(ctx context.Context) ([]kgosource.Job, error)
	Commit(ctx context.Context) error
}

// Consumer stores jobs.
type Consumer struct {
	Src Source
	DB  *sql.DB
}

// Run stores each batch's jobs, logging a failure, then commits.
func (c *Consumer) Run(ctx context.Context) {
	for ctx.Err() == nil {
		jobs, err := c.Src.Poll(ctx)
		if err != nil {
			continue
		}
		for _, j := range jobs {
			if _, err := c.DB.ExecContext(ctx, "INSERT INTO jobs (body) VALUES ($1) ON CONFLICT DO NOTHING", j.Value); err != nil {
				log.Printf("job: %v", err)
			}
		}
		_ = c.Src.Commit(ctx)
	}
}

// Start runs a consumer over Kafka.
func Start(ctx context.Context, k *kgosource.Kafka, db *sql.DB) {
	(&Consumer{Src: k, DB: db}).Run(ctx)
}
