package sqsbroker_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	wsqs "github.com/ThreeDotsLabs/watermill-aws/sqs"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
)

// received simulates what ReceiveMessage returns for a marshalled message.
func received(m *types.Message, id, receipt string, count int) *types.Message {
	m.MessageId, m.ReceiptHandle = aws.String(id), aws.String(receipt)
	m.Attributes = map[string]string{"ApproximateReceiveCount": strconv.Itoa(count)}
	return m
}

func TestMarshalerRoundTrip(t *testing.T) {
	t.Parallel()
	msg := event("E1")
	msg.Metadata.Set("empty", "")
	// Delivery keys of an earlier receive are not sent on.
	msg.Metadata.Set(sqsbroker.MetadataReceiptHandle, "old-handle")
	msg.Metadata.Set(sqsbroker.MetadataMessageID, "old-id")
	msg.Metadata.Set(sqsbroker.MetadataReceiveCount, "3")
	m, err := sqsbroker.Marshaler{}.Marshal(msg)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"event_id", "traceparent", "tenant", wsqs.UUIDAttribute}, keys(m.MessageAttributes))

	got, err := sqsbroker.Marshaler{}.Unmarshal(received(m, "sqs-id", "handle-2", 2))
	require.NoError(t, err)
	require.Equal(t, msg.UUID, got.UUID)
	require.Equal(t, msg.Payload, got.Payload)
	require.Equal(t, message.Metadata{
		"event_id": "E1", "traceparent": msg.Metadata.Get("traceparent"), "tenant": "acme",
		sqsbroker.MetadataMessageID: "sqs-id", sqsbroker.MetadataReceiptHandle: "handle-2", sqsbroker.MetadataReceiveCount: "2",
	}, got.Metadata)
}

// TestMarshalerBinaryBody: a payload SQS cannot carry (a NUL byte, invalid
// UTF-8) travels base64-encoded and comes back byte for byte, through the
// real server too.
func TestMarshalerBinaryBody(t *testing.T) {
	t.Parallel()
	payload := []byte("\x00not json \xff\xfe")
	msg := message.NewMessage("u1", payload)
	msg.Metadata.Set(ackgap.MetadataEventIDKey, "E2")
	m, err := sqsbroker.Marshaler{}.Marshal(msg)
	require.NoError(t, err)
	require.Equal(t, "base64", aws.ToString(m.MessageAttributes[sqsbroker.AttributeBodyEncoding].StringValue))

	got, err := sqsbroker.Marshaler{}.Unmarshal(received(m, "id", "rh", 1))
	require.NoError(t, err)
	require.Equal(t, payload, []byte(got.Payload))
	require.Empty(t, got.Metadata.Get(sqsbroker.AttributeBodyEncoding))

	c := client(t)
	name, url := createQueue(t, c, "binary", 30*time.Second, nil)
	require.NoError(t, newPublisher(t).Publish(name, msg))
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 5, MessageAttributeNames: []string{"All"}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	got, err = sqsbroker.Marshaler{}.Unmarshal(&out.Messages[0])
	require.NoError(t, err)
	require.Equal(t, payload, []byte(got.Payload))
	require.Equal(t, "u1", got.UUID)
	require.Equal(t, "E2", got.Metadata.Get(ackgap.MetadataEventIDKey))
}

// TestMarshalerLimits: more than SQS's 10 attributes or an invalid name
// fail the publish with every problem named; the UUID attribute gives way
// when only it does not fit. (A value SQS refuses as text goes as a Binary
// attribute: TestMarshalerBinaryAttributeRoundTrip.)
func TestMarshalerLimits(t *testing.T) {
	t.Parallel()
	msg := message.NewMessage("u", []byte("x"))
	for i := range 11 {
		msg.Metadata.Set("k"+strconv.Itoa(i), "v")
	}
	msg.Metadata.Set("AWS.reserved", "v")
	msg.Metadata.Set("bad key", "v")
	_, err := sqsbroker.Marshaler{}.Marshal(msg)
	require.ErrorContains(t, err, "metadata needs 11 message attributes, SQS allows 10")
	require.ErrorIs(t, err, ackgap.ErrUnencodable, "retrying cannot help: the router sends a sanitised copy")
	require.ErrorContains(t, err, `"AWS.reserved" is not a valid SQS attribute name`)
	require.ErrorContains(t, err, `"bad key" is not a valid SQS attribute name`)

	msg = message.NewMessage("u", []byte("x"))
	for i := range 10 {
		msg.Metadata.Set("k"+strconv.Itoa(i), "v")
	}
	m, err := sqsbroker.Marshaler{}.Marshal(msg)
	require.NoError(t, err)
	require.Len(t, m.MessageAttributes, 10)
	require.NotContains(t, m.MessageAttributes, wsqs.UUIDAttribute)
}

// TestUnmarshalForeignProducer: a message sent by another SQS client (no
// Watermill UUID attribute; Number, Binary and custom-typed attributes)
// keeps every attribute; the UUID falls back to the MessageId, which is
// never used as the event id.
func TestUnmarshalForeignProducer(t *testing.T) {
	t.Parallel()
	m := &types.Message{
		MessageId: aws.String("mid-1"), ReceiptHandle: aws.String("rh"), Body: aws.String("{}"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"event_id": {DataType: aws.String("String"), StringValue: aws.String("E9")},
			"amount":   {DataType: aws.String("Number.int"), StringValue: aws.String("42")},
			"blob":     {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}},
		},
	}
	got, err := sqsbroker.Marshaler{}.Unmarshal(m)
	require.NoError(t, err)
	require.Equal(t, "mid-1", got.UUID)
	require.Equal(t, message.Metadata{
		"event_id": "E9", "amount": "42", "blob": "\x01\x02",
		sqsbroker.MetadataMessageID: "mid-1", sqsbroker.MetadataReceiptHandle: "rh",
	}, got.Metadata)

	// Without an event_id attribute there is no event id: the inbox
	// rejects the message rather than using the MessageId.
	delete(m.MessageAttributes, "event_id")
	got, err = sqsbroker.Marshaler{}.Unmarshal(m)
	require.NoError(t, err)
	require.Empty(t, got.Metadata.Get(ackgap.MetadataEventIDKey))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
