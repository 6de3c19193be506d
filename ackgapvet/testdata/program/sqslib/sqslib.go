// Package sqslib hands its handlers to an SQS consumer library whose loop
// is not in the checked code (field trial, wave 26: ca-risken's
// go-sqs-poller; wave 27: Wattpad/sqsconsumer behind its middleware).
package sqslib

import (
	"context"
	"database/sql"
	"log"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	sqspoller "example.org/sqspoller"
	"example.org/sqspoller/middleware"
)

// Scanner stores scan results.
type Scanner struct{ db *sql.DB }

// HandleMessage logs a failed insert and returns nil: the library deletes
// the message.
func (s *Scanner) HandleMessage(ctx context.Context, m *sqs.Message) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE scans SET status = 'done' WHERE id = $1", *m.Body); err != nil {
		log.Print(err)
		return nil
	}
	return nil
}

func notify(c *http.Client) sqspoller.HandlerFunc {
	return func(ctx context.Context, body string) error {
		_, err := c.Post("https://hooks.example/scan", "text/plain", strings.NewReader(body))
		return err
	}
}

// Run starts both consumers.
func Run(ctx context.Context, c *sqs.Client, db *sql.DB, hc *http.Client) {
	w := &sqspoller.Worker{}
	w.Start(ctx, &Scanner{db: db})
	sqspoller.NewConsumer(c, middleware.Apply(notify(hc))).Start(ctx, nil)
}
