// Package retryloop retries a message's work in place: without a bound,
// a message whose work can never succeed stops the consumer for good
// (field trial, wave 59: devpool's withRetry around GitHub comments).
package retryloop

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"time"

	"github.com/segmentio/kafka-go"
)

// Consumer posts each message's comment.
type Consumer struct {
	R    *kafka.Reader
	DB   *sql.DB
	HTTP *http.Client
}

// withRetry calls fn until it succeeds.
func withRetry(fn func() error) {
	for {
		if err := fn(); err == nil {
			return
		}
		time.Sleep(5 * time.Second)
	}
}

// withAttempts calls fn at most three times.
func withAttempts(fn func() error) error {
	var err error
	for i := 0; i < 3; i++ {
		if err = fn(); err == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return err
}

func (c *Consumer) post(ctx context.Context, body []byte) error {
	resp, err := c.HTTP.Post("https://comments.example/issues", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("comment: %s", resp.Status)
	}
	return nil
}

// Comments waits for the database first (set-up: not reported), then
// retries each comment through withRetry: reported at the call.
func (c *Consumer) Comments(ctx context.Context) error {
	for {
		if err := c.DB.PingContext(ctx); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	for {
		m, err := c.R.FetchMessage(ctx)
		if err != nil {
			return err
		}
		withRetry(func() error { return c.post(ctx, m.Value) })
		if err := c.R.CommitMessages(ctx, m); err != nil {
			return err
		}
	}
}

// Inline retries each comment in a loop of its own: reported at the loop.
func (c *Consumer) Inline(ctx context.Context) error {
	for {
		m, err := c.R.FetchMessage(ctx)
		if err != nil {
			return err
		}
		for {
			err := c.post(ctx, m.Value)
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
		if err := c.R.CommitMessages(ctx, m); err != nil {
			return err
		}
	}
}

// Bounded gives each comment three attempts, then stops with the error
// (the message is fetched again after a restart): not reported.
func (c *Consumer) Bounded(ctx context.Context) error {
	for {
		m, err := c.R.FetchMessage(ctx)
		if err != nil {
			return err
		}
		if err := withAttempts(func() error { return c.post(ctx, m.Value) }); err != nil {
			return err
		}
		attempts := 0
		for {
			err := c.post(ctx, m.Value)
			if err == nil {
				break
			}
			if attempts++; attempts > 5 {
				return err
			}
			time.Sleep(time.Second)
		}
		if err := c.R.CommitMessages(ctx, m); err != nil {
			return err
		}
	}
}
