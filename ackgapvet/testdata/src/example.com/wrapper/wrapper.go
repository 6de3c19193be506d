// Package wrapper is a team's consumer wrapper: ConsumeClaim calls a handler
// held in a field of a named function type.
package wrapper

import "github.com/IBM/sarama"

// Handler handles one message.
type Handler func(value []byte) error

type Group struct{ onMessage Handler }

func New(h Handler) *Group { return &Group{onMessage: h} }

func (g *Group) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if err := g.onMessage(msg.Value); err != nil {
			continue
		}
		sess.MarkMessage(msg, "")
	}
	return nil
}
