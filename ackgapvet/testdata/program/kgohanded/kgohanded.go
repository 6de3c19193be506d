// Package kgohanded makes the franz-go client, on its default auto-commit,
// and hands it to the consumer package's loop.
package kgohanded

import (
	"context"
	"database/sql"

	"github.com/twmb/franz-go/pkg/kgo"

	"example.com/program/kgohanded/consumer"
)

// Start runs the loop.
func Start(ctx context.Context, db *sql.DB) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("training"), kgo.ConsumeTopics("feedback"))
	if err != nil {
		return err
	}
	consumer.New(cl, db).Run(ctx)
	return nil
}
