// Package boundack subscribes with Watermill and hands each message to
// handlers registered as method values (f.Updated), one of which defers
// its ack (field trial, wave 25: stockohlc's Message.FileUpdated): the
// walk reaches the ack through the method value's synthetic wrapper,
// which has no syntax (the checker crashed there).
package boundack

import (
	"context"
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Handler takes one message.
type Handler func(ctx context.Context, msg *message.Message) error

// subscriber is Watermill's message.Subscriber, its Subscribe method.
type subscriber interface {
	Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error)
}

// Sub runs its handlers on every message of one topic.
type Sub struct {
	sub subscriber
	hs  []Handler
}

// Add registers h.
func (s *Sub) Add(h Handler) { s.hs = append(s.hs, h) }

// Start subscribes and runs the loop until the subscription ends.
func (s *Sub) Start(ctx context.Context) error {
	msgs, err := s.sub.Subscribe(ctx, "files")
	if err != nil {
		return err
	}
	loop(msgs, s.hs)
	return nil
}

func loop(msgs <-chan *message.Message, hs []Handler) {
	for m := range msgs {
		for _, h := range hs {
			go run(h, m)
		}
	}
}

func run(h Handler, m *message.Message) { _ = h(m.Context(), m) }

// Files records file updates.
type Files struct{ DB *sql.DB }

// Updated acks on every return, a failed update too.
func (f *Files) Updated(ctx context.Context, m *message.Message) error {
	defer m.Ack()
	_, err := f.DB.ExecContext(ctx, "UPDATE files SET updated = now() WHERE name = $1", string(m.Payload))
	return err
}

// Wire registers the method value.
func Wire(s *Sub, f *Files) { s.Add(f.Updated) }
