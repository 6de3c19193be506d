// Package rabbit ranges over RabbitMQ deliveries acked with Ack(false)
// (field trial, wave 39: micro-todoList's task consumer): one acks a
// delivery whose insert failed, the other nacks it for redelivery.
package rabbit

import (
	"bytes"
	"context"
	"database/sql"
	"log"
	"net/http"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Tasks stores each task and acks it even when the insert failed.
func Tasks(ctx context.Context, ch *amqp.Channel, db *sql.DB) error {
	msgs, err := ch.Consume("tasks", "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range msgs {
		if _, err := db.ExecContext(ctx, "UPDATE tasks SET done = true WHERE id = $1", string(d.Body)); err != nil {
			log.Printf("task: %v", err)
		}
		_ = d.Ack(false)
	}
	return nil
}

// TasksNack nacks a delivery whose update failed.
func TasksNack(ctx context.Context, ch *amqp.Channel, db *sql.DB) error {
	msgs, err := ch.Consume("tasks", "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range msgs {
		if _, err := db.ExecContext(ctx, "UPDATE tasks SET done = true WHERE id = $1", string(d.Body)); err != nil {
			_ = d.Nack(false, true)
			continue
		}
		_ = d.Ack(false)
	}
	return nil
}

// TasksOnce requeues a failed delivery once, then rejects it to the
// queue's dead-letter exchange.
func TasksOnce(ctx context.Context, ch *amqp.Channel, db *sql.DB) error {
	msgs, err := ch.Consume("tasks", "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range msgs {
		if _, err := db.ExecContext(ctx, "UPDATE tasks SET done = true WHERE id = $1", string(d.Body)); err != nil {
			_ = d.Nack(false, !d.Redelivered)
			continue
		}
		_ = d.Ack(false)
	}
	return nil
}

// TasksSkip goes past a delivery whose update failed with neither Ack nor
// Nack: it stays unacked on the channel (field trial, wave 43:
// m-banking's loop).
func TasksSkip(ctx context.Context, ch *amqp.Channel, db *sql.DB) error {
	msgs, err := ch.Consume("tasks", "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range msgs {
		if _, err := db.ExecContext(ctx, "UPDATE tasks SET done = true WHERE id = $1", string(d.Body)); err != nil {
			log.Printf("task: %v", err)
			continue
		}
		_ = d.Ack(false)
	}
	return nil
}

// Hooks posts each webhook from a queue consumed with autoAck true (field
// trial, wave 50: apphook): RabbitMQ acks each delivery as it sends it, so
// a crash or a failed post loses it, and no redelivery repeats the post.
func Hooks(ch *amqp.Channel, url string) error {
	msgs, err := ch.Consume("hooks", "", true, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range msgs {
		resp, err := http.Post(url, "application/json", bytes.NewReader(d.Body))
		if err != nil {
			log.Printf("hook: %v", err)
			continue
		}
		_ = resp.Body.Close()
	}
	return nil
}

// Broker wraps a channel's Consume with the same parameters (field trial,
// wave 51: order-processing-demo's RabbitMQ type).
type Broker struct{ ch *amqp.Channel }

// Consume passes autoAck straight through to the channel's Consume.
func (b *Broker) Consume(queue, consumer string, autoAck, exclusive, noLocal, noWait bool, args amqp.Table) (<-chan amqp.Delivery, error) {
	return b.ch.Consume(queue, consumer, autoAck, exclusive, noLocal, noWait, args)
}

// Payments posts each payment from the wrapper's deliveries, consumed with
// autoAck true: at most once, as Hooks.
func Payments(b *Broker, url string) error {
	msgs, err := b.Consume("payments", "payment", true, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range msgs {
		resp, err := http.Post(url, "application/json", bytes.NewReader(d.Body))
		if err != nil {
			log.Printf("payment: %v", err)
			continue
		}
		_ = resp.Body.Close()
	}
	return nil
}

// Orders consumes through the wrapper with autoAck false and acks each
// order after logging it: not at most once.
func Orders(b *Broker) error {
	msgs, err := b.Consume("orders", "order", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for d := range msgs {
		log.Printf("order %s", d.Body)
		_ = d.Ack(false)
	}
	return nil
}
