package sqsbroker_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/router"
)

// TestDeadLetterTooManyAttributes (issue 12, item 3): a message with 8
// attributes fails permanently; with the router's dead-letter reason and
// Watermill's four poison keys it would need 13 attributes, which SQS
// does not allow (ackgap.ErrUnencodable), so it used to be nacked and
// dead-lettered again until the redrive policy took it. Now a sanitised
// copy reaches the dead-letter queue at once, with the event id, reason,
// trace context, payload and every original attribute in an attachment;
// the source message is deleted.
func TestDeadLetterTooManyAttributes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client(t)
	name, url := createQueue(t, c, "wide", 30*time.Second, nil)
	dlqName, dlqURL := createQueue(t, c, "wide-dlq", 30*time.Second, nil)
	dlq, err := sqsbroker.NewDeadLetterPublisher(ctx, &sqsbroker.PublisherConfig{OptFns: optFns(t)}, dlqName, testLogger())
	require.NoError(t, err)

	msg := event("E1")
	for i := len(msg.Metadata); i < 8; i++ {
		msg.Metadata.Set(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
	}
	require.Len(t, msg.Metadata, 8)
	require.NoError(t, newPublisher(t).Publish(name, msg))

	b := newBackend(t)
	o := &observed{}
	sub := newSubscriber(t, name, func(c *sqsbroker.SubscriberConfig) { c.AckObserver = o.observeAck })
	runRouter(t, b, sub, router.Config{DeadLetter: dlq}, o, func(context.Context, *sql.Tx, *message.Message) error {
		return ackgap.Permanent("account_closed", nil)
	})
	acks := o.waitAcks(t, 1, 30*time.Second)
	require.Equal(t, sqsbroker.AckDeleted, acks[0].Outcome, "deleted after the sanitised copy, not nacked")

	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(dlqURL), WaitTimeSeconds: 10, MessageAttributeNames: []string{"All"},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	dead, err := sqsbroker.Marshaler{}.Unmarshal(&out.Messages[0])
	require.NoError(t, err)
	require.Equal(t, "E1", dead.Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, "account_closed", dead.Metadata.Get(ackgap.MetadataDeadLetterReason))
	require.Equal(t, msg.Metadata.Get("traceparent"), dead.Metadata.Get("traceparent"))
	require.Contains(t, dead.Metadata.Get(router.MetadataDeadLetterSanitized), "SQS allows 10")
	require.Equal(t, string(msg.Payload), string(dead.Payload))
	var original map[string][]byte
	require.NoError(t, json.Unmarshal([]byte(dead.Metadata.Get(router.MetadataOriginalMetadata)), &original))
	for k, v := range msg.Metadata {
		require.Equal(t, v, string(original[k]), "original attribute %q", k)
	}
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, 0, visible+inFlight, "source message deleted")
	require.Equal(t, map[ackgap.Outcome]int{ackgap.OutcomeFailed: 1}, o.outcomes(), "handled once")
}
