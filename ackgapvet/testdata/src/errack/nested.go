package errack

import (
	"context"
	"database/sql"
	"encoding/json"
	"log"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
)

type chatHandler struct{ db *sql.DB }

func (h *chatHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *chatHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim stores chat messages inside a switch on the topic (wave 21,
// harmony H2): a write whose error is dropped, or only logged, in a case
// falls through to the mark after the switch.
func (h *chatHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		switch string(m.Key) {
		case "message":
			var v struct{ Text string }
			if err := json.Unmarshal(m.Value, &v); err != nil {
				log.Println(err)
			} else {
				h.db.Exec("INSERT INTO messages (text) VALUES ($1)", v.Text) // want `the error of h.db.Exec is dropped unread`
			}
		case "read":
			if _, err := h.db.Exec("UPDATE messages SET read = true WHERE id = $1", string(m.Value)); err != nil {
				log.Println(err) // falls through to the mark after the switch
			}
		case "typing":
			if _, err := h.db.Exec("UPDATE chats SET typing = now() WHERE id = $1", string(m.Value)); err != nil { // want `a message whose h.db.Exec fails is not acked but the loop goes on`
				continue // the next message's mark commits past it
			}
		}
		s.MarkMessage(m, "") // want `acks with sarama.ConsumerGroupSession.MarkMessage even when h.db.Exec failed \(line 32\)`
	}
	return nil
}

type dispatcher struct {
	process func(context.Context, []byte) error
}

// worker commits in the else of its error check (wave 21, base-server's
// workers/consumer.go): a failed message is passed over, and the next
// commit covers it.
func (d *dispatcher) worker(ctx context.Context, r *kafka.Reader) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := d.process(ctx, m.Value); err != nil { // want `a message whose d.process fails is not acked but the loop goes on`
			log.Println(err)
		} else if r != nil {
			_ = r.CommitMessages(ctx, m)
		}
	}
}

// decodeThenCommit passes over a message that does not decode: clean.
func decodeThenCommit(ctx context.Context, r *kafka.Reader) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		var v struct{ ID string }
		if err := json.Unmarshal(m.Value, &v); err != nil {
			log.Println(err)
		} else {
			_ = r.CommitMessages(ctx, m)
		}
	}
}
