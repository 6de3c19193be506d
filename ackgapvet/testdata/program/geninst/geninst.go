// Package geninst runs one generic consumer with two element types whose
// work differs: the walk must pick the same instance on every run (field
// trial, wave 28: LinkMe's e-mail effect was reported in some runs only).
package geninst

import (
	"context"
	"net/http"
	"strings"

	"github.com/segmentio/kafka-go"
)

// Job does an event's work.
type Job interface {
	Do(ctx context.Context, body []byte) error
}

// Mail posts to a mail API.
type Mail struct{ c *http.Client }

// Do sends the mail.
func (m Mail) Do(ctx context.Context, body []byte) error {
	_, err := m.c.Post("https://mail.example/send", "text/plain", strings.NewReader(string(body)))
	return err
}

// Hook posts to a webhook.
type Hook struct{ c *http.Client }

// Do calls the webhook.
func (h Hook) Do(ctx context.Context, body []byte) error {
	_, err := h.c.Post("https://hooks.example/call", "text/plain", strings.NewReader(string(body)))
	return err
}

// Consumer is one loop for any job type.
type Consumer[J Job] struct {
	r   *kafka.Reader
	job J
}

// Run applies each message, then commits it.
func (c *Consumer[J]) Run(ctx context.Context) {
	for {
		m, err := c.r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := c.job.Do(ctx, m.Value); err != nil {
			return
		}
		_ = c.r.CommitMessages(ctx, m)
	}
}

// Start runs both consumers.
func Start(ctx context.Context, r1, r2 *kafka.Reader, hc *http.Client) {
	go (&Consumer[Mail]{r: r1, job: Mail{c: hc}}).Run(ctx)
	go (&Consumer[Hook]{r: r2, job: Hook{c: hc}}).Run(ctx)
}
