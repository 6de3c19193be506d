package gochannelbroker_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/brokers/gochannelbroker"
)

// broker is shared by the suite's tests in this process; GoChannel is
// in-process, so a child process could not reach it anyway.
var broker = gochannelbroker.New(nil)

func newBroker() (brokertest.Broker, error) { return broker, nil }

func TestMain(m *testing.M) {
	brokertest.RunChildIfRequested(newBroker)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = broker.Close() }))
}

func TestRedelivery(t *testing.T) {
	brokertest.Run(t, &brokertest.Harness{
		Features: brokertest.Features{NackRedelivers: true, SurvivesSubscriberCrash: false},
		New:      newBroker,
	})
}
