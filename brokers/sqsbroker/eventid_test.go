package sqsbroker_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/router"
)

// invalidID is an event id that is not UTF-8 (issue 12: bytes ff fe fa).
const invalidID = "\xff\xfe\xfa"

// TestMarshalerBinaryAttributeRoundTrip: a metadata value SQS refuses in a
// String attribute (not UTF-8, a control character) is written as a Binary
// attribute with the same bytes, and reads back unchanged: what Unmarshal
// accepts, Marshal writes back.
func TestMarshalerBinaryAttributeRoundTrip(t *testing.T) {
	t.Parallel()
	msg := message.NewMessage("u", []byte("{}"))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, invalidID)
	msg.Metadata.Set("ctl", "a\x01b")
	msg.Metadata.Set("text", "plain")
	m, err := sqsbroker.Marshaler{}.Marshal(msg)
	require.NoError(t, err)
	require.Equal(t, "Binary", aws.ToString(m.MessageAttributes[ackgap.MetadataEventIDKey].DataType))
	require.Equal(t, []byte(invalidID), m.MessageAttributes[ackgap.MetadataEventIDKey].BinaryValue)
	require.Equal(t, "Binary", aws.ToString(m.MessageAttributes["ctl"].DataType))
	require.Equal(t, "String", aws.ToString(m.MessageAttributes["text"].DataType))

	got, err := sqsbroker.Marshaler{}.Unmarshal(received(m, "id", "rh", 1))
	require.NoError(t, err)
	require.Equal(t, invalidID, got.Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, "a\x01b", got.Metadata.Get("ctl"))
	require.Equal(t, "plain", got.Metadata.Get("text"))
}

// TestInvalidEventIDIsDeadLettered (issue 12, item 1): a message from
// another producer whose event id is a Binary attribute that is not UTF-8
// is rejected at the inbox with reason event_id_invalid, without running
// the handler or retrying, and reaches the dead-letter queue on the first
// try with its id bytes intact (a Binary attribute again); the source
// message is deleted.
func TestInvalidEventIDIsDeadLettered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client(t)
	name, url := createQueue(t, c, "badid", 30*time.Second, nil)
	dlqName, dlqURL := createQueue(t, c, "badid-dlq", 30*time.Second, nil)
	dlq, err := sqsbroker.NewDeadLetterPublisher(ctx, &sqsbroker.PublisherConfig{OptFns: optFns(t)}, dlqName, testLogger())
	require.NoError(t, err)

	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(`{"id":"bad"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			ackgap.MetadataEventIDKey: {DataType: aws.String("Binary"), BinaryValue: []byte(invalidID)},
		},
	})
	require.NoError(t, err)

	b := newBackend(t)
	o := &observed{}
	sub := newSubscriber(t, name, func(c *sqsbroker.SubscriberConfig) { c.AckObserver = o.observeAck })
	runRouter(t, b, sub, router.Config{DeadLetter: dlq}, o, func(context.Context, *sql.Tx, *message.Message) error {
		t.Error("the handler ran for an invalid event id")
		return nil
	})
	acks := o.waitAcks(t, 1, 30*time.Second)
	require.Equal(t, sqsbroker.AckDeleted, acks[0].Outcome, "deleted after the dead-letter publish, not nacked")

	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(dlqURL), WaitTimeSeconds: 10, MessageAttributeNames: []string{"All"},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	attr := out.Messages[0].MessageAttributes[ackgap.MetadataEventIDKey]
	require.Equal(t, "Binary", aws.ToString(attr.DataType))
	require.Equal(t, []byte(invalidID), attr.BinaryValue, "the id's bytes as received")
	m, err := sqsbroker.Marshaler{}.Unmarshal(&out.Messages[0])
	require.NoError(t, err)
	require.Equal(t, ackgap.ReasonEventIDInvalid, m.Metadata.Get(ackgap.MetadataDeadLetterReason))
	require.Equal(t, `{"id":"bad"}`, string(m.Payload))
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, 0, visible+inFlight, "source message deleted")
	require.Equal(t, map[ackgap.Outcome]int{ackgap.OutcomeRejected: 1}, o.outcomes())
	require.Empty(t, b.applied(t))
}
