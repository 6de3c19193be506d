package deadletter

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
)

// TestStampSourceCoordinates: a Kafka record's copy gets its topic,
// partition and offset; a copy from a broker without offsets gets none,
// and loses stale ones it carried (a dead letter redriven and rejected
// again), so they never name another record.
func TestStampSourceCoordinates(t *testing.T) {
	t.Parallel()
	kafka := message.NewMessage("u1", nil)
	kafka.SetContext(ackgap.WithDelivery(context.Background(),
		&ackgap.Delivery{Destination: "orders", Partition: 3, Offset: 1042, HasOffset: true}))
	kafka.Metadata.Set(ackgap.MetadataSourceOffset, "7") // stale
	Stamp(kafka, ackgap.ReasonBadPayload)
	require.Equal(t, message.Metadata{
		ackgap.MetadataDeadLetterReason: ackgap.ReasonBadPayload,
		ackgap.MetadataSourceTopic:      "orders",
		ackgap.MetadataSourcePartition:  "3",
		ackgap.MetadataSourceOffset:     "1042",
	}, kafka.Metadata)

	sqs := message.NewMessage("u2", nil)
	sqs.SetContext(ackgap.WithDelivery(context.Background(), &ackgap.Delivery{Destination: "orders-queue", MessageID: "m-1"}))
	for _, k := range []string{ackgap.MetadataSourceTopic, ackgap.MetadataSourcePartition, ackgap.MetadataSourceOffset} {
		sqs.Metadata.Set(k, "stale")
	}
	Stamp(sqs, ackgap.ReasonPermanent)
	require.Equal(t, message.Metadata{ackgap.MetadataDeadLetterReason: ackgap.ReasonPermanent}, sqs.Metadata)
}

// limited refuses messages with more than max metadata keys as
// unencodable, and records what it published.
type limited struct {
	max       int
	published []*message.Message
}

func (p *limited) Publish(_ string, msgs ...*message.Message) error {
	for _, m := range msgs {
		if len(m.Metadata) > p.max {
			return fmt.Errorf("limited: %d keys: %w", len(m.Metadata), ackgap.ErrUnencodable)
		}
		p.published = append(p.published, m)
	}
	return nil
}
func (p *limited) Close() error { return nil }

// TestSanitisedCopyKeepsSource: the sanitised copy keeps the record's
// source coordinates with the event id, reason and trace context, and
// fits in 9 keys.
func TestSanitisedCopyKeepsSource(t *testing.T) {
	t.Parallel()
	msg := message.NewMessage("u1", []byte("payload"))
	msg.SetContext(ackgap.WithDelivery(context.Background(),
		&ackgap.Delivery{Destination: "orders", Partition: 0, Offset: 5, HasOffset: true}))
	for _, k := range []string{ackgap.MetadataEventIDKey, "traceparent", "tracestate", "a", "b", "c", "d", "e"} {
		msg.Metadata.Set(k, k+"-value")
	}
	Stamp(msg, ackgap.ReasonPermanent)
	pub := &limited{max: 9}
	require.NoError(t, Publish(pub, watermill.NopLogger{}, "dlq", msg, errors.New("boom"), nil))
	require.Len(t, pub.published, 1)
	c := pub.published[0]
	require.Len(t, c.Metadata, 9)
	for _, k := range sanitizedKeys {
		require.Equal(t, msg.Metadata.Get(k), c.Metadata.Get(k), k)
	}
	require.Equal(t, "5", c.Metadata.Get(ackgap.MetadataSourceOffset))
	require.Contains(t, c.Metadata.Get(ackgap.MetadataDeadLetterSanitized), "limited: 12 keys")
}
