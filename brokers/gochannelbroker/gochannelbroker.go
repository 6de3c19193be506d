// Package gochannelbroker wraps Watermill's in-process GoChannel as the
// embedded default broker, in the same shape as the Kafka and SQS
// adapters (brokertest.Broker), so examples and tests swap brokers with one
// flag.
//
//	b := gochannelbroker.New(nil)
//	defer b.Close()
//	pub, _ := b.Publisher()
//	sub, _ := b.Subscriber("billing")
//
// What GoChannel is, stated honestly (brokertest.Features): a nacked
// message is redelivered at once; messages live in memory and die with the
// process, so nothing survives a crash; there are no consumer groups: every
// subscriber of a topic gets every message (fan-out), and the group name is
// ignored. Publish returns once every subscriber acked or nacked (Config
// BlockPublishUntilSubscriberAck), which keeps one topic's messages in
// order, like one Kafka partition.
package gochannelbroker

import (
	"context"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// Config configures [New]. The zero value is ready to use.
type Config struct {
	// OutputChannelBuffer is each subscription's channel buffer, in
	// messages. Default 0 (unbuffered).
	OutputChannelBuffer int64
	// Unordered lets Publish return before subscribers ack, so one topic's
	// messages are handled concurrently and out of order. Default false.
	Unordered bool
	// Logger receives GoChannel's logs. Default watermill.NopLogger.
	Logger watermill.LoggerAdapter
}

// Broker is one in-process GoChannel. It is safe for concurrent use.
type Broker struct {
	pubsub *gochannel.GoChannel
}

// New returns a Broker; cfg nil means all defaults.
func New(cfg *Config) *Broker {
	if cfg == nil {
		cfg = &Config{}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	return &Broker{pubsub: gochannel.NewGoChannel(gochannel.Config{
		OutputChannelBuffer:            cfg.OutputChannelBuffer,
		BlockPublishUntilSubscriberAck: !cfg.Unordered,
	}, logger)}
}

// Publisher returns a publisher on the broker. Its Close does nothing: the
// broker is shared; close it with [Broker.Close]. It never fails.
func (b *Broker) Publisher() (message.Publisher, error) { return shared{b.pubsub}, nil }

// Subscriber returns a subscriber on the broker; group is ignored (GoChannel
// has no consumer groups). Its Close does nothing, so one router closing
// its subscriber does not close the broker under the others. It never
// fails.
func (b *Broker) Subscriber(group string) (message.Subscriber, error) { return shared{b.pubsub}, nil }

// Close closes the broker and every subscription on it; it is safe to call
// twice.
func (b *Broker) Close() error { return b.pubsub.Close() }

// shared exposes the GoChannel without letting a user close it.
type shared struct{ pubsub *gochannel.GoChannel }

var (
	_ message.Publisher  = shared{}
	_ message.Subscriber = shared{}
)

func (s shared) Publish(topic string, msgs ...*message.Message) error {
	return s.pubsub.Publish(topic, msgs...)
}

func (s shared) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return s.pubsub.Subscribe(ctx, topic)
}

func (shared) Close() error { return nil }
