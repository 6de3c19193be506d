package sqsbroker

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ackgap/ackgap"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

// localSQS returns the client options of the local SQS server
// (SQS_ENDPOINT, default fauxqs's http://127.0.0.1:4566).
func localSQS(t *testing.T) func(*sqs.Options) {
	ep := os.Getenv("SQS_ENDPOINT")
	if ep == "" {
		ep = "http://127.0.0.1:4566"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return func(o *sqs.Options) {
		o.BaseEndpoint, o.Region, o.HTTPClient = aws.String(ep), "us-east-1", &http.Client{Transport: tr}
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		})
	}
}

// TestFIFOReleaseAfterNack: real SQS may return several messages of one
// FIFO group in a batch (fauxqs returns one per group, so the batch is
// assembled here from a real receive, with the group attribute SQS would
// add). When the first is nacked, the two after it are not handed out but
// released at once (visibility 0), and the nacked one is hidden for
// NackDelay: none overtakes it.
func TestFIFOReleaseAfterNack(t *testing.T) {
	t.Parallel()
	opt := localSQS(t)
	ctx := context.Background()
	c := sqs.New(sqs.Options{}, opt)
	name := "fifo-release-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "30"}})
	require.NoError(t, err, "start the local SQS server with: tools/brokers.sh install && tools/brokers.sh start")
	t.Cleanup(func() { _, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	for _, id := range []string{"E0", "E1", "E2"} {
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(id),
			MessageAttributes: map[string]types.MessageAttributeValue{"event_id": stringAttribute(id)}})
		require.NoError(t, err)
	}

	var mu sync.Mutex // the observer is called from the worker and the settler
	var reports []*ackgap.Delivery
	s, err := NewSubscriber(ctx, &SubscriberConfig{
		OptFns: []func(*sqs.Options){opt}, Queue: name, AttemptTimeout: time.Second, DisableHeartbeat: true,
		AckObserver: func(_ context.Context, d *ackgap.Delivery) { mu.Lock(); reports = append(reports, d); mu.Unlock() },
	}, watermill.NopLogger{})
	require.NoError(t, err)
	sub := s.newSubscription(ctx)
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2,
		MessageAttributeNames: []string{"All"}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 3)
	for i := range out.Messages {
		out.Messages[i].Attributes = map[string]string{"MessageGroupId": "order-1"}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sub.process(out.Messages, sub.leases.add(out.Messages, time.Now()))
	}()
	first := <-sub.out
	require.Equal(t, "E0", string(first.Payload))
	first.Nack()
	<-done
	sub.settler.close() // the nack answered and reported

	require.Len(t, reports, 3)
	// The nack is answered in the background (the settler), the releases
	// at once: the reports come in either order.
	got := map[string]ackgap.SettleOutcome{}
	for _, d := range reports {
		s, ok := d.Settlement()
		require.True(t, ok, "settled before it is observed")
		got[d.EventID] = s.Outcome
	}
	require.Equal(t, map[string]ackgap.SettleOutcome{"E0": AckNacked, "E1": AckReleased, "E2": AckReleased}, got)
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	require.NoError(t, err)
	require.Equal(t, "2", attrs.Attributes["ApproximateNumberOfMessages"], "E1 and E2 released")
	require.Equal(t, "1", attrs.Attributes["ApproximateNumberOfMessagesNotVisible"], "E0 hidden for NackDelay")
	require.NoError(t, s.Close())
}

// TestFIFOIDs: a group key or event id SQS accepts (1 to 128 ASCII
// letters, digits, punctuation) is sent as is; a longer one, or one with
// spaces or other characters, as its SHA-256 in hex, the same every time.
// A message without a group key is refused, permanently; a dead-lettered
// copy falls back to its event id.
func TestFIFOIDs(t *testing.T) {
	require.Equal(t, "charge:o-1/2", fifoID("charge:o-1/2"))
	long := strings.Repeat("k", 129)
	require.Len(t, fifoID(long), 64)
	require.Equal(t, fifoID(long), fifoID(long))
	require.NotEqual(t, fifoID(long), fifoID(long[:128]+"j"))
	require.Len(t, fifoID("order 1"), 64, "a space is not allowed")
	require.Len(t, fifoID("ordre-é"), 64, "non-ASCII is not allowed")

	attr := func(kv ...string) map[string]types.MessageAttributeValue {
		m := map[string]types.MessageAttributeValue{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(kv[i+1])}
		}
		return m
	}
	g, d, err := fifoIDs(attr(ackgap.MetadataEventIDKey, "E1", MetadataPartitionKey, "o1"))
	require.NoError(t, err)
	require.Equal(t, [2]string{"o1", "E1"}, [2]string{g, d})
	_, _, err = fifoIDs(attr(ackgap.MetadataEventIDKey, "E1"))
	require.ErrorIs(t, err, ErrMissingGroupKey)
	require.True(t, ackgap.IsPermanent(err))
	g, _, err = fifoIDs(attr(ackgap.MetadataEventIDKey, "E1", ackgap.MetadataDeadLetterReason, "permanent"))
	require.NoError(t, err)
	require.Equal(t, "E1", g)
	_, _, err = fifoIDs(attr(MetadataPartitionKey, "o1"))
	require.ErrorIs(t, err, ackgap.ErrMissingEventID)
}
