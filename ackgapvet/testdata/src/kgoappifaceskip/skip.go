// Package kgoappifaceskip holds its franz-go client behind the
// application's own interface and marks only the records whose insert
// succeeded (field trial wave 13, hexagonal-fastcampus-pay H1): the next
// mark commits past a failed one.
package kgoappifaceskip

import (
	"context"
	"database/sql"
	"log"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaClient is the part of *kgo.Client the service uses.
type KafkaClient interface {
	PollFetches(ctx context.Context) kgo.Fetches
	MarkCommitRecords(rs ...*kgo.Record)
}

func consume(ctx context.Context, c KafkaClient, db *sql.DB) {
	for {
		fs := c.PollFetches(ctx)
		for i := range fs {
			r := &fs[i]
			if _, err := db.ExecContext(ctx, "INSERT INTO money VALUES ($1)", r.Value); err != nil { // want `a message whose db.ExecContext fails is not acked but the loop goes on.*kgoappifaceskip.KafkaClient.MarkCommitRecords commits past it`
				log.Println(err)
				continue
			}
			c.MarkCommitRecords(r)
		}
	}
}

// worker takes records from a channel and marks only those whose insert
// succeeded: it has no partition to stop, so the fix is to retry in place.
func worker(ctx context.Context, c KafkaClient, db *sql.DB, jobs <-chan *kgo.Record) {
	for r := range jobs {
		if _, err := db.ExecContext(ctx, "INSERT INTO money VALUES ($1)", r.Value); err != nil { // want `commits past it and it is never delivered again; retry it in place until it succeeds`
			log.Println(err)
			continue
		}
		c.MarkCommitRecords(r)
	}
}

func pooled(ctx context.Context, c KafkaClient, db *sql.DB) {
	jobs := make(chan *kgo.Record)
	go worker(ctx, c, db, jobs)
	for {
		fs := c.PollFetches(ctx)
		for i := range fs {
			jobs <- &fs[i]
		}
	}
}
