// Package batchpoll gathers a batch in a polling loop of its own and hands
// it to the loop that works and commits (field trial, wave 21: Finvibe's
// fetchBatch under runGroup): the caller's loop is the consumer.
package batchpoll

import (
	"context"
	"database/sql"
	"log"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Applier applies batches.
type Applier struct {
	C  *kafka.Consumer
	DB *sql.DB
}

func (w *Applier) fetchBatch(ctx context.Context, limit int) ([]*kafka.Message, error) {
	var batch []*kafka.Message
	for len(batch) < limit && ctx.Err() == nil {
		if m, ok := w.C.Poll(100).(*kafka.Message); ok {
			batch = append(batch, m)
		}
	}
	return batch, ctx.Err()
}

func (w *Applier) apply(ctx context.Context, batch []*kafka.Message) error {
	for _, m := range batch {
		if _, err := w.DB.ExecContext(ctx, "UPDATE prices SET v = $1", string(m.Value)); err != nil {
			return err
		}
	}
	return nil
}

// Run works each batch and commits it; a failed batch is logged and
// passed over, and the next batch's commit covers it.
func (w *Applier) Run(ctx context.Context) {
	for ctx.Err() == nil {
		batch, err := w.fetchBatch(ctx, 100)
		if err != nil || len(batch) == 0 {
			continue
		}
		if err := w.apply(ctx, batch); err != nil {
			log.Printf("apply: %v", err)
			continue
		}
		for _, m := range batch {
			_, _ = w.C.StoreMessage(m)
		}
		_, _ = w.C.Commit()
	}
}
