// Package genclaim's Sarama handler is a generic type (field trial, wave
// 21: lifelog's saramax.Handler[T]); its instance reaches Sarama only as a
// ConsumerGroupHandler, so its methods are called through the interface.
package genclaim

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/IBM/sarama"
)

// Handler decodes each message into a T and hands it to fn.
type Handler[T any] struct {
	fn func(*sarama.ConsumerMessage, T) error
}

// Setup does nothing.
func (h *Handler[T]) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing.
func (h *Handler[T]) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim marks each message its fn handled.
func (h *Handler[T]) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		var v T
		if json.Unmarshal(m.Value, &v) != nil {
			continue
		}
		if err := h.fn(m, v); err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// Like is a like event.
type Like struct{ ID int }

// Counter counts likes.
type Counter struct{ DB *sql.DB }

func (c *Counter) consume(_ *sarama.ConsumerMessage, e Like) error {
	_, err := c.DB.Exec("UPDATE posts SET likes = likes + 1 WHERE id = $1", e.ID)
	return err
}

// Start joins the group with the generic handler.
func Start(ctx context.Context, cg sarama.ConsumerGroup, c *Counter) error {
	return cg.Consume(ctx, []string{"likes"}, &Handler[Like]{fn: c.consume})
}
