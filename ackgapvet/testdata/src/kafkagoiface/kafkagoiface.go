// Package kafkagoiface reads kafka-go through its own interface over the
// reader, kept for tests (wave 15, go-queue's kafkaReader): a consumer like
// a loop over *kafka.Reader.
package kafkagoiface

import (
	"context"
	"net/http"
	"strings"

	"github.com/segmentio/kafka-go"
)

type kafkaReader interface {
	FetchMessage(ctx context.Context) (kafka.Message, error)
	CommitMessages(ctx context.Context, msgs ...kafka.Message) error
}

func consume(ctx context.Context, r kafkaReader) error {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return err
		}
		_, _ = http.Post("https://sink.example.com", "text/plain", strings.NewReader(string(m.Value))) // want `an HTTP request \(http.Post\) on the consumer path of kafka-go reader loop consume`
		if err := r.CommitMessages(ctx, m); err != nil {
			return err
		}
	}
}
