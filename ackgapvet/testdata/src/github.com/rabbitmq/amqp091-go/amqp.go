// Package amqp091 stubs RabbitMQ's Go client.
package amqp091

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

// Channel is an AMQP channel.
type Channel struct{}

// Consume starts delivering the queue's messages.
func (ch *Channel) Consume(queue, consumer string, autoAck, exclusive, noLocal, noWait bool, args map[string]any) (<-chan Delivery, error) {
	return nil, nil
}
