package kafkabroker_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/sqlitebrokertest"
)

// envSuiteParallel, set, makes newSuiteBroker (in this process and in the
// redelivery suite's child processes) hand out ParallelSubscribers.
const envSuiteParallel = "KAFKABROKER_SUITE_PARALLEL"

// parallelSuiteBroker is suiteBroker with ParallelSubscriber.
type parallelSuiteBroker struct{ suiteBroker }

func (b parallelSuiteBroker) Subscriber(group string) (message.Subscriber, error) {
	return kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
		Brokers: b.brokers, ConsumerGroup: group, SessionTimeout: 2 * time.Second, CloseTimeout: 5 * time.Second,
	}}, nil)
}

// TestParallelRedeliverySuite runs the shared redelivery suite on
// ParallelSubscriber, its crash test included (the children inherit
// envSuiteParallel).
func TestParallelRedeliverySuite(t *testing.T) {
	kafkaBrokers(t)
	t.Setenv(envSuiteParallel, "1")
	brokertest.Run(t, &brokertest.Harness[*sql.Tx]{
		Store:    sqlitebrokertest.Store(),
		Features: brokertest.Features{NackRedelivers: true, SurvivesSubscriberCrash: true, ConsumerGroups: true, RedeliveryWait: 30 * time.Second},
		New:      newSuiteBroker,
	})
}

// TestParallelWatermillPubSubSuite runs Watermill's own Pub/Sub suite on
// kafkabroker's publisher and ParallelSubscriber. Order is guaranteed
// only per record key, so GuaranteedOrder is false.
func TestParallelWatermillPubSubSuite(t *testing.T) {
	kafkaBrokers(t)
	withGroup := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: kafkaBrokers(t)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return stampingPublisher{pub}, &parallelGroupPerTopic{t: t, group: group}
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

// parallelGroupPerTopic is groupPerTopic with ParallelSubscriber.
type parallelGroupPerTopic struct {
	t     *testing.T
	group string
	mu    sync.Mutex
	subs  []*kafkabroker.ParallelSubscriber
}

func (g *parallelGroupPerTopic) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	// A short CloseTimeout: the suite's TestMessageCtx expects an unacked
	// message's context to end soon after Close.
	sub, err := kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
		Brokers: kafkaBrokers(g.t), ConsumerGroup: g.group + "." + topic, CloseTimeout: time.Second, SessionTimeout: 2 * time.Second,
	}}, nil)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.subs = append(g.subs, sub)
	g.mu.Unlock()
	return sub.Subscribe(ctx, topic)
}

func (g *parallelGroupPerTopic) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for _, s := range g.subs {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
