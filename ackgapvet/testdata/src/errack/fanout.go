package errack

import (
	"context"
	"database/sql"
	"log"

	"github.com/IBM/sarama"
)

// sources fans each message out to several sources; a source's failure is
// logged inside the loop, and the mark after the loop acks it anyway.
type sources struct {
	db      *sql.DB
	targets map[string]string
}

func (s *sources) process(ctx context.Context, id string, m *sarama.ConsumerMessage) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO deliveries (source, body) VALUES ($1, $2)", id, m.Value)
	return err
}

func (s *sources) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		for id := range s.targets {
			if err := s.process(sess.Context(), id, msg); err != nil {
				log.Println("source failed", id, err)
			}
		}
		sess.MarkMessage(msg, "") // want `acks with sarama.ConsumerGroupSession.MarkMessage even when s.process failed`
	}
	return nil
}

// sourcesStop stops the partition when a source fails: clean.
type sourcesStop struct{ sources }

func (s *sourcesStop) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		for id := range s.targets {
			if err := s.process(sess.Context(), id, msg); err != nil {
				return err
			}
		}
		sess.MarkMessage(msg, "")
	}
	return nil
}
