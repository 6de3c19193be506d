package kafkabroker_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

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
	runWatermillSuite(t, func(t *testing.T, brokers []string, group string) (message.Subscriber, error) {
		return kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
			Brokers: brokers, ConsumerGroup: group, CloseTimeout: time.Second, SessionTimeout: 2 * time.Second,
		}}, nil)
	})
}
