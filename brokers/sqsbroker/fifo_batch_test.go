package sqsbroker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/middleware"
)

// fifoEvent is an event of message group group, with its position in the
// group as its body.
func fifoEvent(id, group string, seq int) *message.Message {
	m := message.NewMessage(id, []byte(strconv.Itoa(seq)))
	m.Metadata.Set(ackgap.MetadataEventIDKey, id)
	m.Metadata.Set(sqsbroker.MetadataPartitionKey, group)
	return m
}

// TestFIFOPublish: the publisher sends a message to a FIFO queue with its
// partition key as MessageGroupId and its event id as
// MessageDeduplicationId, so a second publish of one event within the
// dedupe window is dropped by the queue; a copy sent with a new dedupe id
// (as one sent after the 5-minute window would be) arrives, and the
// consumer's inbox skips it. A message without a group key is refused
// with a permanent error and nothing is sent.
func TestFIFOPublish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client(t)
	name, url := createQueue(t, c, "fifo-pub", 30*time.Second, map[string]string{"FifoQueue": "true"})
	pub := newPublisher(t)
	require.NoError(t, pub.Publish(name, fifoEvent("E1", "order-1", 1)))
	require.NoError(t, pub.Publish(name, fifoEvent("E1", "order-1", 1)), "a second send of E1 succeeds and is dropped")
	require.NoError(t, pub.Publish(name, fifoEvent("E2", "order-1", 2)))

	noGroup := message.NewMessage("E3", []byte("3"))
	noGroup.Metadata.Set(ackgap.MetadataEventIDKey, "E3")
	err := pub.Publish(name, noGroup)
	require.ErrorIs(t, err, sqsbroker.ErrMissingGroupKey)
	require.Equal(t, sqsbroker.ReasonMissingGroupKey, ackgap.ReasonOf(err))

	visible, _ := queueCounts(t, c, url)
	require.Equal(t, 2, visible, "E1 once (deduplicated), E2; E3 not sent")

	// A copy of E1 with a dedupe id of its own: SQS keeps it.
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String("1"),
		MessageGroupId: aws.String("order-1"), MessageDeduplicationId: aws.String("E1-after-the-window"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			ackgap.MetadataEventIDKey: {DataType: aws.String("String"), StringValue: aws.String("E1")},
		},
	})
	require.NoError(t, err)

	b := newPGBackend(t)
	var mu sync.Mutex
	var order []string
	p, err := batch.New(b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"}, Handler: func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		d, _ := ackgap.DeliveryFromContext(ctx)
		if !d.HasKey || d.Key != "order-1" {
			return fmt.Errorf("delivery key %q (has %v), want the group order-1", d.Key, d.HasKey)
		}
		mu.Lock()
		order = append(order, id)
		mu.Unlock()
		return applyPG(ctx, tx, msg)
	}})
	require.NoError(t, err)
	o := &observed{}
	bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, &sqsbroker.SubscriberConfig{
		OptFns: optFns(t), Queue: name, AttemptTimeout: 5 * time.Second, WaitTimeSeconds: 1, AckObserver: o.observeAck,
	}, testLogger())
	require.NoError(t, err)
	require.True(t, bc.Queue().FIFO)
	done := make(chan error, 1)
	go func() { done <- bc.Run(ctx) }()
	t.Cleanup(func() { _ = bc.Close() })
	eventually(t, 20*time.Second, "the queue empty", func() bool {
		visible, inFlight := queueCounts(t, c, url)
		return len(o.ackReports()) == 3 && visible == 0 && inFlight == 0
	})
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)
	require.Equal(t, map[string]int{"E1": 1, "E2": 1}, b.applied(t), "the late copy of E1 skipped by the inbox")
	require.Equal(t, []string{"E1", "E2"}, order, "the group in send order; the copy never reached the handler")
	for _, r := range o.ackReports() {
		require.Equal(t, sqsbroker.AckDeleted, r.Outcome)
	}
}

// TestBatchConsumerFIFOOrder: events over many message groups, each group
// published in order, through the BatchConsumer with several receive
// loops: every group is applied in send order (a per-group sequence
// column), every event exactly once. One message in the middle of group
// g7 fails every time: the queue's redrive policy (maxReceiveCount 2)
// moves it to the dead-letter queue, and g7's later messages are applied
// after it, in order; the other groups finish whatever g7 does.
//
// The issue asks for 10,000 events over 500 groups; that is what runs
// here. With -short (or on a machine too busy for it) it runs 2,000 over
// 100 groups, which checks the same rules. fauxqs returns at most one
// message per group per receive, so on it a batch never holds two
// messages of one group (no rounds): TestBatchConsumerFIFOHoldsBackGroup
// and TestLambdaBatchFIFO cover rounds and held-back messages inside one
// batch.
func TestBatchConsumerFIFOOrder(t *testing.T) {
	t.Parallel()
	groups, perGroup := 500, 20
	if testing.Short() {
		groups = 100
	}
	const poisonGroup, poisonSeq = "g7", 10
	ctx := context.Background()
	c := client(t)
	_, dlqURL := createQueue(t, c, "fifo-order-dlq", 30*time.Second, map[string]string{"FifoQueue": "true"})
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, queueArn(t, c, dlqURL))
	name, url := createQueue(t, c, "fifo-order", 30*time.Second, map[string]string{"FifoQueue": "true", "RedrivePolicy": policy})

	b := newPGBackend(t)
	_, err := b.pool.Exec(ctx, `CREATE TABLE seq (grp text NOT NULL, n int NOT NULL, at bigserial, PRIMARY KEY (grp, n))`)
	require.NoError(t, err)

	// Publish: each group's messages in order, groups in parallel.
	pub := newPublisher(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for g := w; g < groups; g += 8 {
				for n := 1; n <= perGroup; n++ {
					grp := "g" + strconv.Itoa(g)
					if err := pub.Publish(name, fifoEvent(grp+"-"+strconv.Itoa(n), grp, n)); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)

	p, err := batch.New(b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"}, Handler: func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		d, _ := ackgap.DeliveryFromContext(ctx)
		n, err := strconv.Atoi(string(msg.Payload))
		if err != nil {
			return ackgap.Permanent("bad_body", err)
		}
		if d.Key == poisonGroup && n == poisonSeq {
			return errors.New("poison: fails every time")
		}
		_, err = tx.Exec(ctx, `INSERT INTO seq (grp, n) VALUES ($1, $2)`, d.Key, n)
		return err
	}})
	require.NoError(t, err)
	bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, &sqsbroker.SubscriberConfig{
		OptFns: optFns(t), Queue: name, AttemptTimeout: 5 * time.Second, WaitTimeSeconds: 1, Workers: 4,
		NackDelay: 0,
	}, testLogger())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(ctx) }()
	t.Cleanup(func() { _ = bc.Close() })
	total := groups*perGroup - 1
	eventually(t, 5*time.Minute, "every event but the poison one applied and the queue empty", func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM seq`).Scan(&n))
		visible, inFlight := queueCounts(t, c, url)
		return n == total && visible == 0 && inFlight == 0
	})
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)

	rows, err := b.pool.Query(ctx, `SELECT grp, n FROM seq ORDER BY at`)
	require.NoError(t, err)
	last := map[string]int{}
	var grp string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&grp, &n}, func() error {
		want := last[grp] + 1
		if grp == poisonGroup && want == poisonSeq {
			want++
		}
		if n != want {
			return fmt.Errorf("group %s: applied %d after %d", grp, n, last[grp])
		}
		last[grp] = n
		return nil
	})
	require.NoError(t, err, "each group applied in send order, exactly once (the primary key refuses a second application)")
	require.Len(t, last, groups)
	for g, l := range last {
		require.Equal(t, perGroup, l, "group %s complete", g)
	}
	dlq, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(dlqURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		MessageAttributeNames: []string{"All"},
	})
	require.NoError(t, err)
	require.Len(t, dlq.Messages, 1, "the poison message, moved by the redrive policy")
	id := dlq.Messages[0].MessageAttributes[ackgap.MetadataEventIDKey].StringValue
	require.Equal(t, poisonGroup+"-"+strconv.Itoa(poisonSeq), aws.ToString(id))
	require.True(t, strings.HasPrefix(aws.ToString(id), poisonGroup))
}
