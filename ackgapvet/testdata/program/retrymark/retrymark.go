// Package retrymark retries its work a few times in place, then logs the
// last failure and marks the message anyway (field trial, wave 28:
// LinkMe's post, check and publish consumers).
package retrymark

import (
	"context"
	"database/sql"
	"log"
	"time"

	"github.com/IBM/sarama"
)

// Handler writes each post's read count.
type Handler struct{ db *sql.DB }

// Setup does nothing.
func (h *Handler) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing.
func (h *Handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim tries each message five times, then marks it whatever
// happened.
func (h *Handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		var err error
		for i := 0; i < 5; i++ {
			if err = h.process(s.Context(), m); err == nil {
				break
			}
			time.Sleep(time.Duration(1<<i) * 100 * time.Millisecond)
		}
		if err != nil {
			log.Printf("giving up on %d: %v", m.Offset, err)
		}
		s.MarkMessage(m, "")
	}
	return nil
}

func (h *Handler) process(ctx context.Context, m *sarama.ConsumerMessage) error {
	_, err := h.db.ExecContext(ctx, `UPDATE posts SET reads = reads + 1 WHERE id = $1`, string(m.Key))
	return err
}

// Strict retries each message three times, then stops the claim without
// marking it: the message is delivered again.
type Strict struct{ Handler }

// ConsumeClaim returns the last failure instead of marking.
func (h *Strict) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		var err error
		for range 3 {
			if err = h.process(s.Context(), m); err == nil {
				break
			}
		}
		if err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// Ranged retries over a range of attempts, then logs and marks.
type Ranged struct{ Handler }

// ConsumeClaim marks each message after at most three tries.
func (h *Ranged) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		var err error
		for range 3 {
			if err = h.process(s.Context(), m); err == nil {
				break
			}
		}
		if err != nil {
			log.Print(err)
		}
		s.MarkMessage(m, "")
	}
	return nil
}
