package telemetry_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/telemetry"
)

// TestSQSBatchConsumer: the batched mode on the real SQS server, traced
// through batch.Config.Trace alone (the inbox reports on the message's
// ackgap.Delivery). Each message of a received
// batch has its consumer span, linked to the producer's, with the events
// received <= handler_start <= commit <= ack <= broker_confirmed (the
// DeleteMessageBatch that covered it), an ack gap and a lease headroom; a
// copy of an applied event is a duplicate without a commit.
func TestSQSBatchConsumer(t *testing.T) {
	opt := sqsOptFns(t)
	ctx := context.Background()
	client := sqs.New(sqs.Options{}, opt...)
	queue := unique("telemetry-batch")
	queue = queue[:len("telemetry-batch")] + "-" + queue[len("telemetry-batch")+1:] // SQS names allow no dots
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue)})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })

	b := setup(t)
	store := sqliteStore(t)
	begin, err := b.tel.Begin(queue, telemetry.SystemAWSSQS)
	require.NoError(t, err)
	p, err := batch.New[*sql.Tx](store, &batch.Config[*sql.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing"}, Handler: apply, Trace: begin,
	})
	require.NoError(t, err)
	bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, &sqsbroker.SubscriberConfig{OptFns: opt, Queue: queue, AttemptTimeout: 5 * time.Second}, watermill.NopLogger{})
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- bc.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, bc.Close())
	})
	pub, err := sqsbroker.NewPublisher(&sqsbroker.PublisherConfig{OptFns: opt}, watermill.NopLogger{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })

	pctx, producer := b.producerSpan()
	for _, id := range []string{"E1", "E2"} {
		msg := newEvent(id)
		b.tel.Inject(pctx, msg)
		require.NoError(t, pub.Publish(queue, msg))
	}
	first := b.ended(t, 2)
	copyOf := newEvent("E1")
	require.NoError(t, pub.Publish(queue, copyOf))
	spans := b.ended(t, 3)

	for _, s := range first {
		a := attrs(s)
		require.Equal(t, "aws_sqs", a["messaging.system"].AsString())
		require.Equal(t, "process "+queue, s.Name())
		require.Equal(t, telemetry.OutcomeApplied, a[telemetry.AttrOutcome].AsString())
		require.Equal(t, telemetry.ConfirmationConfirmed, a[telemetry.AttrBrokerConfirmation].AsString())
		require.GreaterOrEqual(t, a[telemetry.AttrAckGap].AsFloat64(), 0.0)
		require.Positive(t, a[telemetry.AttrLeaseHeadroom].AsFloat64())
		require.Equal(t, producer.SpanID(), s.Links()[0].SpanContext.SpanID())
		names, at := events(s)
		require.Equal(t, []string{telemetry.EventReceived, telemetry.EventHandlerStart, telemetry.EventCommit,
			telemetry.EventAck, telemetry.EventBrokerConfirmed}, names)
		for i := 1; i < len(names); i++ {
			require.False(t, at[names[i]].Before(at[names[i-1]]), "%s before %s", names[i], names[i-1])
		}
	}
	dup := spans[2]
	require.Equal(t, telemetry.OutcomeDuplicate, attrs(dup)[telemetry.AttrOutcome].AsString())
	var e1 sdktrace.ReadOnlySpan
	for _, s := range first {
		if attrs(s)[telemetry.AttrEventID].AsString() == "E1" {
			e1 = s
		}
	}
	require.NotNil(t, e1)
	require.Len(t, dup.Links(), 1, "no producer span: the copy was published untraced")
	require.Equal(t, e1.SpanContext().SpanID(), dup.Links()[0].SpanContext.SpanID(), "linked to the delivery that applied E1")
	require.Equal(t, []attribute.KeyValue{telemetry.AttrLinkKind.String(telemetry.LinkFirstDelivery)}, dup.Links()[0].Attributes)
	names, _ := events(dup)
	require.NotContains(t, names, telemetry.EventCommit)
	var n int
	require.NoError(t, store.DB().QueryRow(`SELECT sum(n) FROM applied`).Scan(&n))
	require.Equal(t, 2, n)
}
