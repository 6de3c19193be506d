// Package genloop starts one generic function per consumer group, each
// with its own send function; the handler closure the generic function
// builds is run by one non-generic Sarama handler type (field trial, wave
// 28: notification-service's StartConsume[T], where only the login
// instance's e-mail was reached).
package genloop

import (
	"context"
	"encoding/json"
	"log"
	"net/http"
	"strings"

	"github.com/IBM/sarama"
)

// handler runs fn on every message, then marks it.
type handler struct {
	fn func(*sarama.ConsumerMessage)
}

// Setup does nothing.
func (h handler) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing.
func (h handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

// ConsumeClaim marks every message after fn, whatever fn did.
func (h handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.fn(m)
		s.MarkMessage(m, "")
	}
	return nil
}

// StartConsume consumes topic with send as the work.
func StartConsume[T any](ctx context.Context, g sarama.ConsumerGroup, topic string, send func(context.Context, T) error) {
	h := handler{fn: func(m *sarama.ConsumerMessage) {
		var v T
		if err := json.Unmarshal(m.Value, &v); err != nil {
			log.Print(err)
			return
		}
		if err := send(ctx, v); err != nil {
			log.Print(err)
			return
		}
	}}
	for ctx.Err() == nil {
		_ = g.Consume(ctx, []string{topic}, h)
	}
}

// Login is a login event.
type Login struct{ User string }

// Register is a registration event.
type Register struct{ User, Link string }

// Sender sends e-mail through a mail API.
type Sender struct{ c *http.Client }

// SendLogin sends the login notice.
func (s Sender) SendLogin(ctx context.Context, e Login) error {
	_, err := s.c.Post("https://mail.example/login", "text/plain", strings.NewReader(e.User))
	return err
}

// SendRegister sends the confirmation link.
func (s Sender) SendRegister(ctx context.Context, e Register) error {
	_, err := s.c.Post("https://mail.example/register", "text/plain", strings.NewReader(e.Link))
	return err
}

// Run starts both groups.
func Run(ctx context.Context, g1, g2 sarama.ConsumerGroup, s Sender) {
	go StartConsume(ctx, g1, "logins", s.SendLogin)
	go StartConsume(ctx, g2, "registers", s.SendRegister)
}
