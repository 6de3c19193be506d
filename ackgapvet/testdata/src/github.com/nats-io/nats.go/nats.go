// Package nats is a stub of github.com/nats-io/nats.go: only the names the
// checker reads.
package nats

import (
	"context"
	"time"
)

// Conn is a connection.
type Conn struct{}

// Msg is a message; on a JetStream subscription it acks itself.
type Msg struct {
	Subject string
	Data    []byte
}

// AckOpt is an ack option.
type AckOpt interface{}

// Ack acks a JetStream message.
func (m *Msg) Ack(opts ...AckOpt) error { return nil }

// AckSync acks a JetStream message and waits for the server.
func (m *Msg) AckSync(opts ...AckOpt) error { return nil }

// Nak asks for a redelivery.
func (m *Msg) Nak(opts ...AckOpt) error { return nil }

// NakWithDelay asks for a redelivery after delay.
func (m *Msg) NakWithDelay(delay time.Duration, opts ...AckOpt) error { return nil }

// Respond answers a request.
func (m *Msg) Respond(data []byte) error { return nil }

// Term stops redelivery.
func (m *Msg) Term(opts ...AckOpt) error { return nil }

// MsgHandler is a subscription callback.
type MsgHandler func(msg *Msg)

// Subscription is a subscription.
type Subscription struct{}

// Subscribe calls cb for each message on subj (at most once).
func (nc *Conn) Subscribe(subj string, cb MsgHandler) (*Subscription, error) { return nil, nil }

// QueueSubscribe calls cb for each message on subj, one member of queue each.
func (nc *Conn) QueueSubscribe(subj, queue string, cb MsgHandler) (*Subscription, error) {
	return nil, nil
}

// Publish publishes data on subj.
func (nc *Conn) Publish(subj string, data []byte) error { return nil }

// SubOpt is a subscription option.
type SubOpt interface{}

// ManualAck turns off the ack after the callback returns.
func ManualAck() SubOpt { return nil }

// JetStreamContext is JetStream's legacy API.
type JetStreamContext interface {
	Subscribe(subj string, cb MsgHandler, opts ...SubOpt) (*Subscription, error)
	QueueSubscribe(subj, queue string, cb MsgHandler, opts ...SubOpt) (*Subscription, error)
	PullSubscribe(subj, durable string, opts ...SubOpt) (*Subscription, error)
	AddConsumer(stream string, cfg *ConsumerConfig, opts ...interface{}) (*ConsumerInfo, error)
}

// ConsumerConfig configures a JetStream consumer; MaxDeliver 0 is
// unlimited (-1 on the server).
type ConsumerConfig struct {
	Durable       string
	FilterSubject string
	MaxDeliver    int
	BackOff       []time.Duration
}

// ConsumerInfo describes a consumer.
type ConsumerInfo struct{}

// JetStream returns the connection's JetStream context.
func (nc *Conn) JetStream() (JetStreamContext, error) { return nil, nil }

// PullOpt is a fetch option.
type PullOpt interface{}

// Fetch pulls up to batch messages.
func (s *Subscription) Fetch(batch int, opts ...PullOpt) ([]*Msg, error) { return nil, nil }

// NextMsgWithContext waits for the next message.
func (s *Subscription) NextMsgWithContext(ctx context.Context) (*Msg, error) { return nil, nil }
