// Package saramaoff turns Sarama's auto-commit off and never commits the
// session (field trial, wave 26: Cornerstone-backend H1): the marks stay
// in the client, and the group never commits.
package saramaoff

import (
	"database/sql"

	"github.com/IBM/sarama"
)

// Config is the consumer's configuration.
func Config() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetNewest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	return cfg
}

// H stores comments.
type H struct{ db *sql.DB }

// Setup does nothing.
func (h *H) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing.
func (h *H) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim stores and marks each message.
func (h *H) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		if _, err := h.db.Exec("UPDATE comments SET status = $1 WHERE id = 1", string(m.Value)); err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

var _ sarama.ConsumerGroupHandler = (*H)(nil)
