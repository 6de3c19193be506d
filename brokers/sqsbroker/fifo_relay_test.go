package sqsbroker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
)

// TestRelayFIFO: outbox rows relayed to a FIFO queue with outbox.Publish
// and the sqsbroker publisher carry their partition_key header as the
// MessageGroupId and their idempotency key as the event id and the
// MessageDeduplicationId, so a second publish of a row (a relay's retry
// after a crash before its recording) is dropped by the queue within the
// dedupe window. A row without a partition_key header is refused: dead at
// once, reason sqsbroker.ReasonMissingGroupKey, nothing sent; an operator
// redrives it once its writer sets the header. With Concurrency 1 the
// rows of a group are sent in the order they were written.
func TestRelayFIFO(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client(t)
	name, url := createQueue(t, c, "fifo-relay", 30*time.Second, map[string]string{"FifoQueue": "true"})
	b := newPGBackend(t)
	res, err := b.store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "orders", EventID: "order.placed:o1"})
	require.NoError(t, err)
	for _, e := range []ackgap.OutboxEntry{
		{Kind: "ship", IdempotencyKey: "ship:o1:1", Payload: []byte("1"), Headers: map[string]string{sqsbroker.MetadataPartitionKey: "o1"}},
		{Kind: "ship", IdempotencyKey: "ship:o1:2", Payload: []byte("2"), Headers: map[string]string{sqsbroker.MetadataPartitionKey: "o1"}},
		{Kind: "ship", IdempotencyKey: "ship:nogroup", Payload: []byte("3")},
	} {
		err := b.store.QueueOutboxTx(ctx, res.Tx, &e)
		require.NoError(t, err)
	}
	require.NoError(t, b.store.CommitTx(ctx, res.Tx))

	publish := outbox.Publish(newPublisher(t), name)
	var mu sync.Mutex
	outcomes := map[string]outbox.Outcome{}
	reasons := map[string]string{}
	relay, err := outbox.New(b.store, &outbox.Config{
		// One effect at a time, in claim order: the relay does not yet keep
		// a group's rows in order with several effects in flight.
		Concurrency: 1,
		Effects: map[string]outbox.Effect{"ship": func(ctx context.Context, row stores.OutboxRow) error {
			if err := publish(ctx, row); err != nil {
				return err
			}
			return publish(ctx, row) // a repeat of the same row: the queue drops it
		}},
		Observer: func(_ context.Context, r *outbox.Report) {
			mu.Lock()
			defer mu.Unlock()
			outcomes[r.Row.IdempotencyKey] = r.Outcome
			reasons[r.Row.IdempotencyKey] = ackgap.ReasonOf(r.Err)
		},
	})
	require.NoError(t, err)
	total := 0
	for {
		n, err := relay.RunOnce(ctx)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		total += n
	}
	require.Equal(t, 3, total)
	mu.Lock()
	require.Equal(t, map[string]outbox.Outcome{"ship:o1:1": outbox.OutcomeDone, "ship:o1:2": outbox.OutcomeDone, "ship:nogroup": outbox.OutcomeDead}, outcomes)
	require.Equal(t, sqsbroker.ReasonMissingGroupKey, reasons["ship:nogroup"])
	mu.Unlock()

	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	got := map[string]string{}
	for _, m := range out.Messages {
		id := aws.ToString(m.MessageAttributes[ackgap.MetadataEventIDKey].StringValue)
		require.Equal(t, id, m.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)])
		got[id] = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	}
	// fauxqs returns one message per group per receive (SQS may return
	// both): the first of group o1 is here, the second behind it.
	require.Equal(t, map[string]string{"ship:o1:1": "o1"}, got)
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, 1, visible+inFlight-len(out.Messages), "two messages in all: each row once, its repeat dropped, the group-less row never sent")
}
