package kafkabroker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

// stampingPublisher gives Watermill's test messages an event id (their
// UUID): kafkabroker's publisher refuses a message without one.
type stampingPublisher struct{ message.Publisher }

func (p stampingPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		if m.Metadata.Get(ackgap.MetadataEventIDKey) == "" {
			m.Metadata.Set(ackgap.MetadataEventIDKey, m.UUID)
		}
	}
	return p.Publisher.Publish(topic, msgs...)
}

// TestWatermillPubSubSuite runs Watermill's own Pub/Sub suite against
// kafkabroker's publisher and subscriber, with the features watermill-kafka
// claims for synchronous commits (ForceShort: per-ack commits are slow by
// design, see FetchMaxWaitDefault).
func TestWatermillPubSubSuite(t *testing.T) {
	kafkaBrokers(t)
	withGroup := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: kafkaBrokers(t)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The suite's TestMessageCtx expects an unacked message's context to
		// end soon after Close; kafkabroker first waits CloseTimeout for it
		// to be acked (graceful shutdown), so the suite gets a short one.
		return stampingPublisher{pub}, &groupPerTopic{t: t, group: group}
	}
	tests.TestPubSub(t, tests.Features{
		ConsumerGroups:      true,
		ExactlyOnceDelivery: false,
		GuaranteedOrder:     false,
		Persistent:          true,
		ForceShort:          true,
	}, func(t *testing.T) (message.Publisher, message.Subscriber) {
		return withGroup(t, "watermill-suite-"+randomHex(6))
	}, withGroup)
}

// groupPerTopic subscribes each topic with a kafkabroker subscriber of
// its own, in consumer group "<group>.<topic>": subscribers of one topic
// still share a group, but subscribing a second topic does not make the
// first topic's member rebalance (the suite's TestTopic subscribes two
// topics from one subscriber and waits only 15 s).
type groupPerTopic struct {
	t     *testing.T
	group string
	mu    sync.Mutex
	subs  []*kafkabroker.Subscriber
}

func (g *groupPerTopic) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	// The suite's TestMessageCtx expects an unacked message's context to
	// end soon after Close; kafkabroker first waits CloseTimeout for it
	// to be acked (graceful shutdown), so the suite gets a short one.
	sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{Brokers: kafkaBrokers(g.t), ConsumerGroup: g.group + "." + topic,
		CloseTimeout: time.Second, SessionTimeout: 2 * time.Second}, nil)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.subs = append(g.subs, sub)
	g.mu.Unlock()
	return sub.Subscribe(ctx, topic)
}

func (g *groupPerTopic) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for _, s := range g.subs {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
