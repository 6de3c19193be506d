// Package clicks counts link clicks from Kafka the way wave 14's
// go_url-shortener does: the fetch loop sends each event on a channel its
// caller made and passed in, commits, and the caller does the work.
package clicks

import (
	"context"
	"database/sql"
	"log"

	"github.com/segmentio/kafka-go"
)

// Event is one click.
type Event struct{ Code string }

// Source is what the service consumes from.
type Source interface {
	Consume(ctx context.Context, out chan<- Event) error
}

// Subscriber reads the clicks topic.
type Subscriber struct{ R *kafka.Reader }

// Consume sends every click on out and commits it.
func (s *Subscriber) Consume(ctx context.Context, out chan<- Event) error {
	for {
		m, err := s.R.FetchMessage(ctx)
		if err != nil {
			return err
		}
		out <- Event{Code: string(m.Value)}
		if err := s.R.CommitMessages(ctx, m); err != nil {
			return err
		}
	}
}

// StatService stores the counts.
type StatService struct {
	Sub Source
	DB  *sql.DB
}

// Start consumes until ctx ends.
func (s *StatService) Start(ctx context.Context) error {
	events := make(chan Event, 128)
	go s.Sub.Consume(ctx, events)
	for {
		select {
		case ev := <-events:
			if _, err := s.DB.ExecContext(ctx, "INSERT INTO stats (code, clicks) VALUES ($1, 1) ON CONFLICT (code) DO UPDATE SET clicks = stats.clicks + EXCLUDED.clicks", ev.Code); err != nil {
				log.Printf("add click: %v", err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
