// Package jetstream is a stub of nats.go's jetstream package.
package jetstream

import (
	"context"
	"time"
)

// Msg is a JetStream message.
type Msg interface {
	Data() []byte
	Ack() error
	DoubleAck(context.Context) error
	Nak() error
	NakWithDelay(delay time.Duration) error
	Term() error
	Metadata() (*MsgMetadata, error)
}

// ConsumerConfig configures a consumer; MaxDeliver 0 is unlimited.
type ConsumerConfig struct {
	Durable    string
	MaxDeliver int
	BackOff    []time.Duration
}

// MsgMetadata is what a message's reply subject says.
type MsgMetadata struct{ NumDelivered uint64 }

// MessageHandler is a Consume callback.
type MessageHandler func(msg Msg)

// PullConsumeOpt is a Consume option.
type PullConsumeOpt interface{}

// ConsumeContext stops a Consume.
type ConsumeContext interface{ Stop() }

// MessagesContext iterates over messages.
type MessagesContext interface {
	Next() (Msg, error)
	Stop()
}

// FetchOpt is a Fetch option.
type FetchOpt interface{}

// MessageBatch is a fetched batch.
type MessageBatch interface {
	Messages() <-chan Msg
	Error() error
}

// Consumer is a JetStream consumer.
type Consumer interface {
	Consume(handler MessageHandler, opts ...PullConsumeOpt) (ConsumeContext, error)
	Messages(opts ...PullConsumeOpt) (MessagesContext, error)
	Fetch(batch int, opts ...FetchOpt) (MessageBatch, error)
	Next(opts ...FetchOpt) (Msg, error)
}
