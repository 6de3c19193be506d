// Package namederr marks each message after a call whose named error
// result nothing sets (field trial, wave 47: distr-transactions' payment
// service hands the work to a goroutine and returns its untouched err):
// the logged failure branch never runs. The twin that sets its named
// error keeps its finding.
package namederr

import (
	"database/sql"
	"log"

	"github.com/IBM/sarama"
)

// H pays orders.
type H struct{ db *sql.DB }

// Setup does nothing.
func (h *H) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing.
func (h *H) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// pay starts the payment and returns err, which nothing sets.
func (h *H) pay(id string) (err error) {
	go h.work(id)
	return err
}

// work records the payment.
func (h *H) work(id string) {
	_, _ = h.db.Exec("UPDATE orders SET paid = true WHERE id = $1", id)
}

// refund records the refund; its named error is the write's.
func (h *H) refund(id string) (err error) {
	_, err = h.db.Exec("UPDATE orders SET refunded = true WHERE id = $1", id)
	return
}

// ConsumeClaim pays, refunds and marks each message.
func (h *H) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		if err := h.pay(string(m.Value)); err != nil {
			log.Printf("pay: %v", err)
		}
		if err := h.refund(string(m.Value)); err != nil {
			log.Printf("refund: %v", err)
		}
		s.MarkMessage(m, "")
	}
	return nil
}

var _ sarama.ConsumerGroupHandler = (*H)(nil)
