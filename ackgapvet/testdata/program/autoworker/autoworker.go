// Package autoworker polls with librdkafka's background commit on and
// hands each message to a worker goroutine over a channel; the worker
// drops its work's error (field trial, wave 28: email-service, whose
// worker ran `_ = uc.Execute(...)` under a "TODO: error handling").
package autoworker

import (
	"context"
	"log"
	"net/http"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"example.com/program/autoworker/metrics"
)

// Mailer sends e-mail through an API.
type Mailer struct{ c *http.Client }

// Send sends one e-mail.
func (m Mailer) Send(ctx context.Context, body []byte) error {
	resp, err := m.c.Post("https://mail.example/send", "text/plain", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Run polls and hands each message to the worker.
func Run(ctx context.Context, m Mailer) {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"group.id": "mail", "bootstrap.servers": "localhost:9092"})
	if err != nil {
		log.Fatal(err)
	}
	ch := make(chan *kafka.Message)
	go func() {
		for msg := range ch {
			_ = m.Send(ctx, msg.Value)
		}
	}()
	go work(ctx, m, ch)
	for ctx.Err() == nil {
		if msg, ok := c.Poll(100).(*kafka.Message); ok {
			ch <- msg
		}
	}
}

// work logs the failure instead of dropping it: the message is lost all
// the same, since the background commit has moved past it.
func work(ctx context.Context, m Mailer, ch <-chan *kafka.Message) {
	for msg := range ch {
		if err := m.Send(ctx, msg.Value); err != nil {
			log.Printf("send: %v", err)
		}
		if err := metrics.Glob.Inc("sent"); err != nil {
			log.Printf("metrics: %v", err) // a lost sample, not a lost message
		}
	}
}
