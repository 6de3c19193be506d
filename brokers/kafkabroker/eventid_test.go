package kafkabroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

// TestInvalidEventIDIsDeadLettered (issue 12, item 1): a record from
// another producer whose event_id header is not UTF-8 (bytes ff fe fa) is
// dead-lettered at once with reason event_id_invalid, on PostgreSQL, which
// would refuse such an id (SQLSTATE 22021); the dead-letter record keeps
// the id's bytes, and the next record of the partition is processed.
func TestInvalidEventIDIsDeadLettered(t *testing.T) {
	t.Parallel()
	b := pgBackend(t)
	topic, group := unique("orders"), unique("billing")
	dlqTopic := topic + ".dlq"
	pub := newPublisher(t)
	bad := message.NewMessage(watermill.NewUUID(), []byte(`{"id":"bad"}`))
	bad.Metadata.Set(ackgap.MetadataEventIDKey, "\xff\xfe\xfa")
	bad.Metadata.Set(kafkabroker.MetadataPartitionKey, "order-1")
	require.NoError(t, pub.Publish(topic, bad, event(t, "evt-after", "order-1")))

	rep := &reports{}
	r, err := router.New(b.store, &router.Config{
		DeadLetter: pub, DeadLetterTopic: dlqTopic, Logger: testLogger(),
		InboxConfig: middleware.InboxConfig{Observer: rep.observe},
	})
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("billing", topic, newSubscriber(t, group, nil), func(ctx context.Context, tx TTxPG, msg *message.Message) error {
		return b.apply(ctx, tx, msg.Metadata.Get(ackgap.MetadataEventIDKey))
	}))
	rn := start(t, r)
	eventually(t, 60*time.Second, "the record after the invalid id", func() bool { return len(rep.outcomes("evt-after")) == 1 })
	require.NoError(t, rn.close())
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeRejected}, rep.outcomes(""), "rejected once, not retried")
	require.Equal(t, map[string]int{"evt-after": 1}, b.applied(t))

	dead := readAll(t, dlqTopic, 1)[0]
	require.Equal(t, ackgap.ReasonEventIDInvalid, dead.Metadata.Get(ackgap.MetadataDeadLetterReason))
	require.Equal(t, "\xff\xfe\xfa", dead.Metadata.Get(ackgap.MetadataEventIDKey), "the id's bytes, for redrive")
	require.Equal(t, `{"id":"bad"}`, string(dead.Payload))
}
