// Package saramaok turns Sarama's auto-commit off and commits the session
// after each mark: the good twin of saramaoff, whose missing Commit this
// package's, in another package of the module, does not hide.
package saramaok

import (
	"database/sql"

	"github.com/IBM/sarama"
)

// Config is the consumer's configuration.
func Config() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	return cfg
}

// H stores comments.
type H struct{ db *sql.DB }

// Setup does nothing.
func (h *H) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing.
func (h *H) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim stores, marks and commits each message.
func (h *H) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		if _, err := h.db.Exec("UPDATE comments SET status = $1 WHERE id = 1", string(m.Value)); err != nil {
			return err
		}
		s.MarkMessage(m, "")
		s.Commit()
	}
	return nil
}

var _ sarama.ConsumerGroupHandler = (*H)(nil)
