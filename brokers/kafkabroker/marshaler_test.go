package kafkabroker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

var _ kafka.MarshalerUnmarshaler = kafkabroker.Marshaler{}

func TestNewEvent(t *testing.T) {
	t.Parallel()
	msg, err := kafkabroker.NewEvent("order-42-placed", []byte("{}"))
	require.NoError(t, err)
	require.Equal(t, "order-42-placed", msg.Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, "order-42-placed", msg.UUID)

	_, err = kafkabroker.NewEvent("", nil)
	require.ErrorIs(t, err, ackgap.ErrMissingEventID)
	_, err = kafkabroker.NewEvent(strings.Repeat("x", 256), nil)
	require.ErrorIs(t, err, ackgap.ErrEventIDTooLong)
	_, err = kafkabroker.NewEvent("\xff\xfe\xfa", nil)
	require.ErrorIs(t, err, ackgap.ErrEventIDInvalid)
	_, err = kafkabroker.NewEvent("a\x00b", nil)
	require.ErrorIs(t, err, ackgap.ErrEventIDInvalid)
}

func TestStampEventID(t *testing.T) {
	t.Parallel()
	msg := message.NewMessage("uuid-1", nil)
	require.ErrorIs(t, kafkabroker.StampEventID(msg, ""), ackgap.ErrMissingEventID)
	require.Empty(t, msg.Metadata.Get(ackgap.MetadataEventIDKey))
	require.NoError(t, kafkabroker.StampEventID(msg, "evt-1"))
	require.NoError(t, kafkabroker.StampEventID(msg, "evt-1"), "stamping the same id again is a no-op")
	require.ErrorIs(t, kafkabroker.StampEventID(msg, "evt-2"), kafkabroker.ErrEventIDAlreadySet)
	require.Equal(t, "evt-1", msg.Metadata.Get(ackgap.MetadataEventIDKey), "never replaced")
}

func header(rec *sarama.ProducerMessage, key string) (string, bool) {
	for _, h := range rec.Headers {
		if string(h.Key) == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func key(t *testing.T, rec *sarama.ProducerMessage) string {
	t.Helper()
	if rec.Key == nil {
		return ""
	}
	b, err := rec.Key.Encode()
	require.NoError(t, err)
	return string(b)
}

func TestMarshaler(t *testing.T) {
	t.Parallel()
	m := kafkabroker.Marshaler{}
	msg := event(t, "evt-1", "order-7")
	rec, err := m.Marshal("orders", msg)
	require.NoError(t, err)
	require.Equal(t, "orders", rec.Topic)
	require.Equal(t, "order-7", key(t, rec), "the partition key is the record key")
	for k, v := range map[string]string{
		kafka.UUIDHeaderKey:       "evt-1",
		ackgap.MetadataEventIDKey: "evt-1",
		"traceparent":             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tenant":                  "acme",
		"partition_key":           "order-7",
	} {
		got, ok := header(rec, k)
		require.True(t, ok, "header %s missing", k)
		require.Equal(t, v, got, "header %s", k)
	}
	var keys []string
	for _, h := range rec.Headers[1:] {
		keys = append(keys, string(h.Key))
	}
	require.IsNonDecreasing(t, keys, "headers in key order: the same message always encodes the same")

	// Consumer side: headers come back as metadata.
	value, err := rec.Value.Encode()
	require.NoError(t, err)
	in := &sarama.ConsumerMessage{Topic: "orders", Value: value}
	for _, h := range rec.Headers {
		in.Headers = append(in.Headers, &sarama.RecordHeader{Key: h.Key, Value: h.Value})
	}
	got, err := m.Unmarshal(in)
	require.NoError(t, err)
	require.Equal(t, msg.UUID, got.UUID)
	require.Equal(t, msg.Metadata, got.Metadata)
	require.Equal(t, msg.Payload, got.Payload)

	// Without a partition key: keyed by the event id.
	delete(msg.Metadata, kafkabroker.MetadataPartitionKey)
	rec, err = m.Marshal("orders", msg)
	require.NoError(t, err)
	require.Equal(t, "evt-1", key(t, rec))

	// Another metadata key as partition key.
	msg.Metadata.Set("customer", "c-9")
	rec, err = kafkabroker.Marshaler{PartitionKey: "customer"}.Marshal("orders", msg)
	require.NoError(t, err)
	require.Equal(t, "c-9", key(t, rec))
}

func TestMarshalerRefusals(t *testing.T) {
	t.Parallel()
	m := kafkabroker.Marshaler{}
	noID := message.NewMessage("uuid-1", []byte("x"))
	_, err := m.Marshal("orders", noID)
	require.ErrorIs(t, err, ackgap.ErrMissingEventID, "a producer must stamp an event id")

	// A message dead-lettered for lacking an event id is forwarded as is.
	noID.Metadata.Set(ackgap.MetadataDeadLetterReason, ackgap.ReasonMissingEventID)
	rec, err := m.Marshal("orders.dlq", noID)
	require.NoError(t, err)
	require.Nil(t, rec.Key, "no key: any partition")
	reason, _ := header(rec, ackgap.MetadataDeadLetterReason)
	require.Equal(t, ackgap.ReasonMissingEventID, reason)

	reserved := event(t, "evt-1", "")
	reserved.Metadata.Set(kafka.UUIDHeaderKey, "x")
	_, err = m.Marshal("orders", reserved)
	require.ErrorContains(t, err, "reserved")
}

func TestContextPassthroughs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, ok := kafkabroker.PartitionFromContext(ctx)
	require.False(t, ok)
	_, ok = kafkabroker.OffsetFromContext(ctx)
	require.False(t, ok)
	_, ok = kafkabroker.KeyFromContext(ctx)
	require.False(t, ok)
	_, ok = kafkabroker.TimestampFromContext(ctx)
	require.False(t, ok)
	// With values: see TestRoundTrip, where watermill-kafka sets them.
}
