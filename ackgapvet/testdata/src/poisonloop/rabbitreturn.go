package poisonloop

import (
	"context"
	"encoding/json"
	"log"

	amqp "github.com/rabbitmq/amqp091-go"
)

// workers returns out of its delivery loop on a failed save (field trial,
// wave 50: video_transcoding's workers): the goroutine stops consuming
// for good, and the unacked delivery stays on the channel.
func workers(ctx context.Context, ch *amqp.Channel) {
	msgs, err := ch.Consume("jobs", "", false, false, false, false, nil)
	if err != nil {
		return
	}
	for d := range msgs {
		var o order
		if err := json.Unmarshal(d.Body, &o); err != nil {
			_ = d.Nack(false, false)
			continue
		}
		if err := save(ctx, o); err != nil {
			log.Printf("save: %v", err)
			return // want `returns from the loop over RabbitMQ deliveries when save fails \(line 25\): the loop stops consuming for good`
		}
		if err := d.Ack(false); err != nil {
			return // the channel's failure, not the message's
		}
	}
}

// workersGoOn nacks the failed save and goes on with the next delivery.
func workersGoOn(ctx context.Context, ch *amqp.Channel) {
	msgs, err := ch.Consume("jobs", "", false, false, false, false, nil)
	if err != nil {
		return
	}
	for d := range msgs {
		var o order
		if err := json.Unmarshal(d.Body, &o); err != nil {
			_ = d.Nack(false, false)
			continue
		}
		if err := save(ctx, o); err != nil {
			_ = d.Nack(false, false)
			continue
		}
		_ = d.Ack(false)
	}
}

// consumeOrDie ends the process when the registration fails, before its
// loop (field trial, wave 52: bakery-go): the broker's failure at start,
// not a message's, so no finding.
func consumeOrDie(ctx context.Context, ch *amqp.Channel) {
	msgs, err := ch.Consume("orders", "", false, false, false, false, nil)
	if err != nil {
		log.Fatalf("consume: %v", err)
	}
	for d := range msgs {
		if err := save(ctx, order{ID: string(d.Body)}); err != nil {
			_ = d.Nack(false, false)
			continue
		}
		_ = d.Ack(false)
	}
}
