package telemetry_test

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/telemetry"
)

// sqsOptFns points an SQS client at SQS_ENDPOINT (default
// http://127.0.0.1:4566, where tools/brokers.sh start runs fauxqs), failing
// the test when it does not answer: these tests never skip.
func sqsOptFns(t testing.TB) []func(*sqs.Options) {
	t.Helper()
	ep := os.Getenv("SQS_ENDPOINT")
	if ep == "" {
		ep = "http://127.0.0.1:4566"
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	resp, err := hc.Get(ep + "/health")
	if err != nil {
		t.Fatalf("SQS endpoint %s (SQS_ENDPOINT) is unreachable: %v\n\tstart it with: tools/brokers.sh install && tools/brokers.sh start", ep, err)
	}
	_ = resp.Body.Close()
	return []func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(ep)
		o.Region = "us-east-1"
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "telemetry tests"}, nil
		})
		o.HTTPClient = hc
	}}
}

// TestSQSLeaseExpired: with the heartbeat off, a handler (3 s) outlives
// the queue's visibility timeout (2 s). The first delivery commits and is
// deleted after its lease ended: its span says lease_expired, its lease
// headroom is negative, and the lease headroom metric records it. The
// second worker received the message again meanwhile: its span is a
// duplicate without a commit, linked to the first delivery's span (the
// traceparent kept in the inbox row). Both link to the producer's span.
func TestSQSLeaseExpired(t *testing.T) {
	opt := sqsOptFns(t)
	ctx := context.Background()
	client := sqs.New(sqs.Options{}, opt...)
	queue := unique("telemetry-s11")
	queue = queue[:len("telemetry-s11")] + "-" + queue[len("telemetry-s11")+1:] // SQS names allow no dots
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue), Attributes: map[string]string{"VisibilityTimeout": "2"}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })

	b := setup(t)
	store := sqliteStore(t)
	pub, err := sqsbroker.NewPublisher(&sqsbroker.PublisherConfig{OptFns: opt}, watermill.NopLogger{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	slow := func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		if err := apply(ctx, tx, msg); err != nil {
			return err
		}
		time.Sleep(3 * time.Second)
		return nil
	}
	for range 2 { // two workers of one consumer
		sub, err := sqsbroker.NewSubscriber(ctx, &sqsbroker.SubscriberConfig{
			OptFns: opt, Queue: queue, AttemptTimeout: 5 * time.Second, CloseTimeout: 10 * time.Second,
			DisableHeartbeat: true, Workers: 1, MaxNumberOfMessages: 1,
			VisibilityFactor: 0.4, // the lease (2 s) is shorter than the handler on purpose: case S11
		}, watermill.NopLogger{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Close() })
		runRouter(t, b, store, telemetry.SystemAWSSQS, queue, sub, pub, slow, nil)
	}

	pctx, producer := b.producerSpan()
	msg := message.NewMessage(watermill.NewUUID(), []byte(`{}`))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, "E1")
	b.tel.Inject(pctx, msg)
	require.NoError(t, pub.Publish(queue, msg))

	spans := b.ended(t, 2)
	first, second := spans[0], spans[1]
	a1, a2 := attrs(first), attrs(second)
	require.Equal(t, telemetry.OutcomeApplied, a1[telemetry.AttrOutcome].AsString())
	require.True(t, a1[telemetry.AttrLeaseExpired].AsBool(), "%v", a1)
	require.Negative(t, a1[telemetry.AttrLeaseHeadroom].AsFloat64(), "the ack came after the lease ended")
	require.Equal(t, telemetry.OutcomeDuplicate, a2[telemetry.AttrOutcome].AsString())
	names, _ := events(second)
	require.NotContains(t, names, telemetry.EventCommit)
	for _, s := range spans {
		require.Equal(t, "aws_sqs", attrs(s)["messaging.system"].AsString())
		require.Equal(t, producer.SpanID(), s.Links()[0].SpanContext.SpanID())
	}
	require.Len(t, first.Links(), 1)
	require.Len(t, second.Links(), 2)
	link := second.Links()[1]
	require.Equal(t, first.SpanContext().TraceID(), link.SpanContext.TraceID(), "the duplicate links to the first delivery's trace")
	require.Equal(t, first.SpanContext().SpanID(), link.SpanContext.SpanID())
	require.Equal(t, []attribute.KeyValue{telemetry.AttrLinkKind.String(telemetry.LinkFirstDelivery)}, link.Attributes)
	minimum := 0.0
	for _, dp := range histogram(t, b.metrics(t), telemetry.MetricLeaseHeadroom) {
		if m, ok := dp.Min.Value(); ok {
			minimum = min(minimum, m)
		}
	}
	require.Negative(t, minimum, "the histogram saw a negative headroom")
	t.Logf("lease headroom: first delivery %.3f s (lease expired), duplicate %v s",
		a1[telemetry.AttrLeaseHeadroom].AsFloat64(), a2[telemetry.AttrLeaseHeadroom])
}
