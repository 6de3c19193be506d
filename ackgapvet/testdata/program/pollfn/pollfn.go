// Package pollfn takes one message per call of a function that a loop
// calls again and again: the function fetches, works and commits, and a
// failure returns from it before the commit (field trial, wave 19's iiot
// poll and wave 20's Common-Backend consume).
package pollfn

import (
	"context"
	"database/sql"
	"log"

	"github.com/segmentio/kafka-go"
)

// Consumer reads a topic into a table.
type Consumer struct {
	R  *kafka.Reader
	DB *sql.DB
}

// Listen calls consume until the context ends, and only logs its error.
func (c *Consumer) Listen(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.consume(ctx); err != nil {
			log.Printf("consume: %v", err)
		}
	}
}

func (c *Consumer) consume(ctx context.Context) error {
	m, err := c.R.FetchMessage(ctx)
	if err != nil {
		return err
	}
	if _, err := c.DB.ExecContext(ctx, "UPDATE checks SET done = true WHERE id = $1", string(m.Value)); err != nil {
		return err
	}
	return c.R.CommitMessages(ctx, m)
}

// Run calls poll for ever; poll has no result.
func (c *Consumer) Run(ctx context.Context) {
	for {
		c.poll(ctx)
	}
}

func (c *Consumer) poll(ctx context.Context) {
	m, err := c.R.FetchMessage(ctx)
	if err != nil {
		return
	}
	if _, err := c.DB.ExecContext(ctx, "UPDATE devices SET seen = now() WHERE id = $1", string(m.Value)); err != nil {
		log.Printf("poll: %v", err)
		return
	}
	_ = c.R.CommitMessages(ctx, m)
}

// Serve stops on the first failure: the message is fetched again by the
// next reader (not reported).
func (c *Consumer) Serve(ctx context.Context) error {
	for {
		if err := c.handleOne(ctx); err != nil {
			return err
		}
	}
}

func (c *Consumer) handleOne(ctx context.Context) error {
	m, err := c.R.FetchMessage(ctx)
	if err != nil {
		return err
	}
	if _, err := c.DB.ExecContext(ctx, "UPDATE orders SET paid = true WHERE id = $1", string(m.Value)); err != nil {
		return err
	}
	return c.R.CommitMessages(ctx, m)
}
