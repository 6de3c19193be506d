// Package consumer polls a franz-go client it is given through its own
// interface: the client is made elsewhere in the module (field trial, wave
// 59: rtsa_webgpu's training consumer).
package consumer

import (
	"context"
	"database/sql"
	"log"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaClient is the part of *kgo.Client the loop uses.
type KafkaClient interface {
	PollFetches(ctx context.Context) kgo.Fetches
}

// Trainer stores each record's value.
type Trainer struct {
	C  KafkaClient
	DB *sql.DB
}

// New returns a trainer over the client.
func New(c KafkaClient, db *sql.DB) *Trainer { return &Trainer{C: c, DB: db} }

// Run skips a poll whose fetches carry an error, and only logs a failed
// write: the client's auto-commit commits both.
func (l *Trainer) Run(ctx context.Context) {
	for {
		fs := l.C.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			log.Printf("fetch: %v", errs)
			continue
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, err := l.DB.ExecContext(ctx, "UPDATE models SET state = $1 WHERE id = 1", string(r.Value)); err != nil {
				log.Printf("store: %v", err)
			}
		})
	}
}
