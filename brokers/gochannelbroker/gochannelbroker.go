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
//
// Each message handed out carries an ackgap.Delivery in its context with
// Confirmation ackgap.ConfirmationAtAck: GoChannel has no broker behind
// the ack, so the ack is the confirmation (package telemetry records the
// broker_confirmed event at the ack, and an ack gap of commit -> ack).
package gochannelbroker

import (
	"context"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/ackgap/ackgap"
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
	pubsub    *gochannel.GoChannel
	buffer    int64
	closing   chan struct{} // closed by Close
	closeOnce sync.Once
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
	}, logger), buffer: cfg.OutputChannelBuffer, closing: make(chan struct{})}
}

// Publisher returns a publisher on the broker. Its Close does nothing: the
// broker is shared; close it with [Broker.Close]. It never fails.
func (b *Broker) Publisher() (message.Publisher, error) { return shared{b}, nil }

// Subscriber returns a subscriber on the broker; group is ignored (GoChannel
// has no consumer groups). Its Close does nothing, so one router closing
// its subscriber does not close the broker under the others. It never
// fails.
func (b *Broker) Subscriber(group string) (message.Subscriber, error) { return shared{b}, nil }

// Close closes the broker and every subscription on it; it is safe to call
// twice.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() { close(b.closing) })
	return b.pubsub.Close()
}

// shared exposes the GoChannel without letting a user close it.
type shared struct{ b *Broker }

var (
	_ message.Publisher  = shared{}
	_ message.Subscriber = shared{}
)

func (s shared) Publish(topic string, msgs ...*message.Message) error {
	return s.b.pubsub.Publish(topic, msgs...)
}

// Subscribe forwards GoChannel's subscription, putting an ackgap.Delivery
// (ConfirmationAtAck) in each message's context. The channel closes when
// ctx ends or the broker closes, like GoChannel's own.
func (s shared) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	in, err := s.b.pubsub.Subscribe(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := make(chan *message.Message, s.b.buffer)
	go func() {
		defer close(out)
		for msg := range in {
			msg.SetContext(ackgap.WithDelivery(msg.Context(), &ackgap.Delivery{Confirmation: ackgap.ConfirmationAtAck}))
			select {
			case out <- msg:
			case <-ctx.Done():
				// Not handed out: GoChannel stops waiting for its ack when
				// the subscription's ctx ends, and closes in.
			case <-s.b.closing:
			}
		}
	}()
	return out, nil
}

func (shared) Close() error { return nil }
