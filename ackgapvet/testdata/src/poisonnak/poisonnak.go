// Package poisonnak: a JetStream callback hands each message to the
// package's handler, which Naks a failure at once against a MaxDeliver of
// 3 with no BackOff (field trial, wave 59: Project-BYTZ's notification
// consumer): a transient failure spends the three deliveries within
// milliseconds.
package poisonnak

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
)

type consumer struct{ js nats.JetStreamContext }

func (c *consumer) start(ctx context.Context) error {
	if _, err := c.js.AddConsumer("EVENTS", &nats.ConsumerConfig{Durable: "notify", MaxDeliver: 3}); err != nil {
		return err
	}
	_, err := c.js.Subscribe("EVENTS.*", func(m *nats.Msg) { c.handle(ctx, m) }, nats.ManualAck())
	return err
}

func (c *consumer) handle(ctx context.Context, m *nats.Msg) {
	if err := c.process(ctx, m.Data); err != nil {
		_ = m.Nak() // want `naks the message at once when c.process fails \(line 26\), with no count of its attempts, and this package's JetStream consumer config sets MaxDeliver 3 with no BackOff`
		return
	}
	_ = m.Ack()
}

func (c *consumer) process(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return errors.New("empty event")
	}
	return nil
}
