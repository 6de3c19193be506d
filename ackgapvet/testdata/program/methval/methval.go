// Package methval has SQS receive loops that call their work through a
// function-typed parameter: main passes a method value (st.Save, a bound
// method wrapper in SSA) to one and a closure whose parameter names differ
// from the parameter type's to the other.
package methval

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Work is what a loop does with one message body.
type Work func(context.Context, string) error

// Run receives, calls h, and deletes what h handled.
func Run(ctx context.Context, c *sqs.Client, h func(context.Context, string) error) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if err := h(ctx, *m.Body); err != nil {
				continue
			}
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// RunWork is Run with the named function type.
func RunWork(ctx context.Context, c *sqs.Client, h Work) {
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if err := h(ctx, *m.Body); err != nil {
				continue
			}
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// Store posts what it saves.
type Store struct{ C *http.Client }

// Save posts the body to the ledger.
func (s *Store) Save(ctx context.Context, body string) error {
	_, err := s.C.Post("http://ledger.local/save", "text/plain", strings.NewReader(body))
	return err
}

// Notifier returns the work of the second loop: a closure whose parameters
// are named otherwise than Work's.
func Notifier(c *http.Client) Work {
	return func(cx context.Context, payload string) error {
		_, err := c.Post("http://notify.local/send", "text/plain", strings.NewReader(payload))
		return err
	}
}
