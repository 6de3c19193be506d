package poisonloop

import (
	"context"
	"log"

	"github.com/nats-io/nats.go"
)

// chainWorker pulls from a durable whose config sets no MaxDeliver and
// Naks every failure (field trial, wave 50: cic-custodial H8): a message
// that can never succeed is delivered again at once, without end.
func chainWorker(ctx context.Context, js nats.JetStreamContext) error {
	if _, err := js.AddConsumer("CHAIN", &nats.ConsumerConfig{Durable: "dispatch", FilterSubject: "CHAIN.*"}); err != nil {
		return err
	}
	sub, err := js.PullSubscribe("CHAIN.*", "dispatch", nats.ManualAck())
	if err != nil {
		return err
	}
	for {
		msgs, err := sub.Fetch(1)
		if err != nil {
			continue
		}
		for _, m := range msgs {
			if err := save(ctx, order{ID: string(m.Data)}); err != nil {
				log.Printf("dispatch: %v", err)
				_ = m.Nak() // want `naks the message when save fails \(line 27\), with no count of its attempts, and this package's JetStream consumer config sets no MaxDeliver`
				continue
			}
			_ = m.Ack()
		}
	}
}

// boundedWorker's durable sets MaxDeliver: the server stops after five.
func boundedWorker(ctx context.Context, js nats.JetStreamContext) error {
	if _, err := js.AddConsumer("JOBS", &nats.ConsumerConfig{Durable: "jobs", MaxDeliver: 5}); err != nil {
		return err
	}
	sub, err := js.PullSubscribe("JOBS.*", "jobs", nats.ManualAck())
	if err != nil {
		return err
	}
	for {
		msgs, err := sub.Fetch(1)
		if err != nil {
			continue
		}
		for _, m := range msgs {
			if err := save(ctx, order{ID: string(m.Data)}); err != nil {
				_ = m.Nak()
				continue
			}
			_ = m.Ack()
		}
	}
}
