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
// design, see FetchMaxWaitDefault), on a broker of its own that the
// suite's TestReconnect restarts (restartableKfake says what a restart is).
func TestWatermillPubSubSuite(t *testing.T) {
	runWatermillSuite(t, newRestartableKfake(t), func(t *testing.T, brokers []string, group string) (message.Subscriber, error) {
		return kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: group,
			CloseTimeout: time.Second, SessionTimeout: 2 * time.Second}, nil)
	})
}

// runWatermillSuite runs Watermill's Pub/Sub suite on kafkabroker's
// publisher and the subscribers newSub makes, connected to broker, which
// the suite's TestReconnect restarts twice while 10,000 messages go
// through (it runs alone, before the other tests of the suite start).
// Order is guaranteed only per record key (the parallel subscriber) or per
// partition, and the suite's topics have several: GuaranteedOrder is
// false.
//
// Under the race detector the suite gets no restart command and skips
// TestReconnect: Watermill v1.5.2's TestReconnect appends to its list of
// published messages in one goroutine and reads it in another without
// synchronization (pubsub/tests/test_pubsub.go), which -race reports as a
// data race every time (and which can count the last message as never
// published). TestReconnectAcrossBrokerRestart runs the same scenario on
// the same restartable broker, race-free, in every build.
func runWatermillSuite(t *testing.T, broker *restartableKfake, newSub func(t *testing.T, brokers []string, group string) (message.Subscriber, error)) {
	brokers := []string{broker.Addr}
	var restart []string
	if !raceEnabled {
		restart = broker.Command()
	}
	withGroup := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, nil)
		if err != nil {
			t.Fatal(err)
		}
		newSub := func(t *testing.T, group string) (message.Subscriber, error) { return newSub(t, brokers, group) }
		return stampingPublisher{pub}, &groupPerTopic{t: t, group: group, newSub: newSub}
	}
	tests.TestPubSub(t, tests.Features{
		ConsumerGroups:        true,
		ExactlyOnceDelivery:   false,
		GuaranteedOrder:       false,
		Persistent:            true,
		ForceShort:            true,
		RestartServiceCommand: restart,
	}, func(t *testing.T) (message.Publisher, message.Subscriber) {
		return withGroup(t, "watermill-suite-"+randomHex(6))
	}, withGroup)
}

// groupPerTopic subscribes each topic with a subscriber of its own (made by
// newSub), in consumer group "<group>.<topic>": subscribers of one topic
// still share a group, but subscribing a second topic does not make the
// first topic's member rebalance (the suite's TestTopic subscribes two
// topics from one subscriber and waits only 15 s). The subscribers get a
// short CloseTimeout: the suite's TestMessageCtx expects an unacked
// message's context to end soon after Close, and kafkabroker first waits
// CloseTimeout for it to be acked (graceful shutdown).
type groupPerTopic struct {
	t      *testing.T
	group  string
	newSub func(t *testing.T, group string) (message.Subscriber, error)
	mu     sync.Mutex
	subs   []message.Subscriber
}

func (g *groupPerTopic) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	sub, err := g.newSub(g.t, g.group+"."+topic)
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
