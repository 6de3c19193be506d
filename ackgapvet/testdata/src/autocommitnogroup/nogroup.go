// Package autocommitnogroup holds kafka-go readers without a group: one
// started at "now" (wave 17, provisioning-backend), and one whose offset
// the application restores from its own store (not reported).
package autocommitnogroup

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"
)

func fromNow(ctx context.Context, out chan<- []byte) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{"k:9092"}, Topic: "requests", StartOffset: kafka.LastOffset}) // want `starts at the newest offset \(or a time\) on every start, so what was published while it was down is never read`
	_ = r.SetOffsetAt(ctx, time.Now())
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return
		}
		out <- m.Value
	}
}
