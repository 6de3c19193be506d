// Package synccb commits, then saves through an interface whose
// implementation writes inside a library's synchronous callback (wave 19,
// porter-management: the commit before handler.Execute, whose write is in
// gorm's Transaction); a dead-letter send in between is not the work.
package synccb

import (
	"context"
	"encoding/json"

	"github.com/segmentio/kafka-go"
)

// Saver saves a message's value.
type Saver interface {
	Save(ctx context.Context, v []byte) error
}

// DLQ records a failure.
type DLQ interface {
	SendToDLQ(ctx context.Context, m kafka.Message, err error) error
}

// Run commits first.
func Run(ctx context.Context, r *kafka.Reader, s Saver, dlq DLQ) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		_ = r.CommitMessages(ctx, m)
		var v map[string]any
		if err := json.Unmarshal(m.Value, &v); err != nil {
			_ = dlq.SendToDLQ(ctx, m, err)
			continue
		}
		_ = s.Save(ctx, m.Value)
	}
}
