// Package amqp091 stubs RabbitMQ's Go client.
package amqp091

import "context"

// Publishing is a message to publish.
type Publishing struct {
	ContentType string
	MessageId   string
	Body        []byte
}

// PublishWithContext sends msg to exchange with the routing key.
func (ch *Channel) PublishWithContext(ctx context.Context, exchange, key string, mandatory, immediate bool, msg Publishing) error {
	return nil
}

// Delivery is a received message.
type Delivery struct {
	DeliveryTag uint64
	Redelivered bool
	Body        []byte
}

// Ack acknowledges the delivery (and every earlier one when multiple).
func (d Delivery) Ack(multiple bool) error { return nil }

// Nack rejects the delivery, requeued when requeue.
func (d Delivery) Nack(multiple, requeue bool) error { return nil }

// Table holds a queue's or a consume's arguments.
type Table map[string]interface{}

// Channel is an AMQP channel.
type Channel struct{}

// Consume starts delivering the queue's messages.
func (ch *Channel) Consume(queue, consumer string, autoAck, exclusive, noLocal, noWait bool, args Table) (<-chan Delivery, error) {
	return nil, nil
}
