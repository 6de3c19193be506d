package gochannelbroker_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/brokers/gochannelbroker"
	"github.com/ackgap/ackgap/internal/sqlitebrokertest"
)

// broker is shared by the suite's tests in this process; GoChannel is
// in-process, so a child process could not reach it anyway.
var broker = gochannelbroker.New(nil)

func newBroker() (brokertest.Broker, error) { return broker, nil }

func TestMain(m *testing.M) {
	brokertest.RunChildIfRequested(newBroker, sqlitebrokertest.Store())
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = broker.Close() }))
}

func TestRedelivery(t *testing.T) {
	brokertest.Run(t, &brokertest.Harness[*sql.Tx]{
		Store:    sqlitebrokertest.Store(),
		Features: brokertest.Features{NackRedelivers: true, SurvivesSubscriberCrash: false},
		New:      newBroker,
	})
}

// TestConfirmationAtAck: each message carries an ackgap.Delivery saying
// the ack is the confirmation (nothing behind GoChannel can fail after
// it), so nobody settles it; the subscription closes with its ctx.
func TestConfirmationAtAck(t *testing.T) {
	b := gochannelbroker.New(&gochannelbroker.Config{OutputChannelBuffer: 1})
	defer b.Close()
	pub, err := b.Publisher()
	require.NoError(t, err)
	sub, err := b.Subscriber("billing")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	msgs, err := sub.Subscribe(ctx, "orders")
	require.NoError(t, err)
	go func() { _ = pub.Publish("orders", message.NewMessage("m1", []byte("{}"))) }()
	msg := <-msgs
	d, ok := ackgap.DeliveryFromContext(msg.Context())
	require.True(t, ok)
	require.Equal(t, ackgap.ConfirmationAtAck, d.Confirmation)
	require.False(t, d.HasOffset)
	require.False(t, d.OnSettled(func(ackgap.Settlement) {}), "nobody settles it")
	msg.Ack()
	cancel()
	for range msgs {
	}
}
