package poisonloop

import (
	"context"
	"log"
	"time"

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
				_ = m.Nak() // want `naks the message when save fails \(line 28\), with no count of its attempts, and this package's JetStream consumer config sets no MaxDeliver`
				continue
			}
			_ = m.Ack()
		}
	}
}

// boundedWorker's durable sets MaxDeliver 5 with no BackOff, and a failure
// Naks at once: a transient failure spends the five deliveries within
// milliseconds, and the server drops the message (field trial, wave 59:
// Project-BYTZ's MaxDeliver 3).
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
				_ = m.Nak() // want `naks the message at once when save fails \(line \d+\), with no count of its attempts, and this package's JetStream consumer config sets MaxDeliver 5 with no BackOff`
				continue
			}
			_ = m.Ack()
		}
	}
}

// backoffWorker's durable spaces its five deliveries with a BackOff.
func backoffWorker(ctx context.Context, js nats.JetStreamContext) error {
	if _, err := js.AddConsumer("MAIL", &nats.ConsumerConfig{Durable: "mail", MaxDeliver: 5, BackOff: []time.Duration{time.Second, 10 * time.Second, time.Minute}}); err != nil {
		return err
	}
	sub, err := js.PullSubscribe("MAIL.*", "mail", nats.ManualAck())
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

// delayedWorker Naks with a delay: its five deliveries are spaced.
func delayedWorker(ctx context.Context, js nats.JetStreamContext) error {
	if _, err := js.AddConsumer("SMS", &nats.ConsumerConfig{Durable: "sms", MaxDeliver: 5}); err != nil {
		return err
	}
	sub, err := js.PullSubscribe("SMS.*", "sms", nats.ManualAck())
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
				_ = m.NakWithDelay(30 * time.Second)
				continue
			}
			_ = m.Ack()
		}
	}
}
