// Package decodehelper decodes each Kafka message in a helper below
// ConsumeClaim and returns the helper's error from the claim (field trial,
// wave 40: go-taskflow's processMessage): a message that does not decode
// ends the session every time. Its twin's helper skips such a message.
package decodehelper

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"log"

	"github.com/IBM/sarama"
)

type task struct{ ID string }

// H runs tasks.
type H struct{ db *sql.DB }

// Setup does nothing.
func (h *H) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing.
func (h *H) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim returns the helper's error.
func (h *H) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		if err := h.process(m); err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

func (h *H) process(m *sarama.ConsumerMessage) error {
	var t task
	if err := json.Unmarshal(m.Value, &t); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	_, err := h.db.Exec("UPDATE tasks SET state = 'running' WHERE id = $1", t.ID)
	return err
}

// Skip runs tasks and skips what does not decode.
type Skip struct{ db *sql.DB }

// Setup does nothing.
func (h *Skip) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing.
func (h *Skip) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim returns the helper's error.
func (h *Skip) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		if err := h.process(m); err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

func (h *Skip) process(m *sarama.ConsumerMessage) error {
	var t task
	if err := json.Unmarshal(m.Value, &t); err != nil {
		log.Printf("skip %d: %v", m.Offset, err)
		return nil
	}
	_, err := h.db.Exec("UPDATE tasks SET state = 'running' WHERE id = $1", t.ID)
	return err
}

var (
	_ sarama.ConsumerGroupHandler = (*H)(nil)
	_ sarama.ConsumerGroupHandler = (*Skip)(nil)
)
