package kafkabroker_test

import (
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/mysqlbrokertest"
	"github.com/ackgap/ackgap/internal/sqlitebrokertest"
)

// suiteBroker is kafkabroker in the redelivery suite's shape. Its
// subscribers use a 2 s session so a killed member's partitions move to the
// restarted one quickly (kfake's group minimum is lowered to 1 s by
// tools/brokers.sh).
type suiteBroker struct{ brokers []string }

func newSuiteBroker() (brokertest.Broker, error) {
	env := os.Getenv("KAFKA_BROKERS")
	if env == "" {
		env = brokersEnvDefault
	}
	b := suiteBroker{brokers: strings.Split(env, ",")}
	if os.Getenv(envSuiteParallel) != "" {
		// The suite's child processes inherit the parent's environment.
		return parallelSuiteBroker{b}, nil
	}
	return b, nil
}

func (b suiteBroker) Publisher() (message.Publisher, error) {
	return kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: b.brokers}, nil)
}

func (b suiteBroker) Subscriber(group string) (message.Subscriber, error) {
	return kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{
		Brokers: b.brokers, ConsumerGroup: group, SessionTimeout: 2 * time.Second, CloseTimeout: 5 * time.Second,
	}, nil)
}

func TestRedeliverySuite(t *testing.T) {
	kafkaBrokers(t) // fails with instructions when no broker runs
	brokertest.Run(t, &brokertest.Harness[*sql.Tx]{
		Store:    sqlitebrokertest.Store(),
		Features: brokertest.Features{NackRedelivers: true, SurvivesSubscriberCrash: true, ConsumerGroups: true, RedeliveryWait: 30 * time.Second},
		New:      newSuiteBroker,
	})
}

// TestRedeliverySuiteMariaDB runs the same suite with the routers on the
// MariaDB store.
func TestRedeliverySuiteMariaDB(t *testing.T) {
	kafkaBrokers(t)
	brokertest.Run(t, &brokertest.Harness[*sql.Tx]{
		Store:    mysqlbrokertest.Store(),
		Features: brokertest.Features{NackRedelivers: true, SurvivesSubscriberCrash: true, ConsumerGroups: true, RedeliveryWait: 30 * time.Second},
		New:      newSuiteBroker,
	})
}
