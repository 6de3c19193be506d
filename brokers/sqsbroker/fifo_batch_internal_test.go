package sqsbroker

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// TestBatchConsumerFIFOHoldsBackGroup: real SQS may return several
// messages of one FIFO group in a receive (fauxqs returns one per group,
// so the batch is assembled here from a real receive, with the group
// attribute SQS would add). Groups A (E0, E1 whose body does not decode,
// E2), B (E3 whose handler fails, E4) and C (E5, E6): E0, E5 and E6 are
// applied, C's in two rounds in order, and deleted; E1 and E3 are nacked
// with the later messages of their groups (E2, E4), which are not
// handed to the handler.
func TestBatchConsumerFIFOHoldsBackGroup(t *testing.T) {
	t.Parallel()
	opt := localSQS(t)
	ctx := context.Background()
	c := sqs.New(sqs.Options{}, opt)
	name := "fifo-hold-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "30"}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	group := map[string]string{"E0": "A", "E1": "A", "E2": "A", "E3": "B", "E4": "B", "E5": "C", "E6": "C"}
	for i := range 7 {
		id := "E" + strconv.Itoa(i)
		attrs := map[string]types.MessageAttributeValue{"event_id": stringAttribute(id)}
		body := id
		if id == "E1" {
			attrs[AttributeBodyEncoding], body = stringAttribute("base64"), "not base64!"
		}
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body), MessageAttributes: attrs})
		require.NoError(t, err)
	}

	pool, _ := testdb.Schema(t, 4)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	var mu sync.Mutex
	var ran []string
	p, err := batch.New(store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"}, Handler: func(ctx context.Context, _ pgx.Tx, _ *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		mu.Lock()
		ran = append(ran, id)
		mu.Unlock()
		if id == "E3" {
			return errors.New("E3 fails")
		}
		return nil
	}})
	require.NoError(t, err)
	var reports []*ackgap.Delivery
	bc, err := NewBatchConsumer(ctx, p.ProcessErrors, &SubscriberConfig{
		OptFns: []func(*sqs.Options){opt}, Queue: name, AttemptTimeout: time.Second, DisableHeartbeat: true,
		AckObserver: func(_ context.Context, d *ackgap.Delivery) { reports = append(reports, d) },
	}, watermill.NopLogger{})
	require.NoError(t, err)
	var ms []types.Message
	for len(ms) < 7 {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2,
			MessageAttributeNames: []string{"All"}})
		require.NoError(t, err)
		require.NotEmpty(t, out.Messages)
		ms = append(ms, out.Messages...)
	}
	// Send order, as a FIFO queue returns a group.
	byID := map[string]types.Message{}
	for _, m := range ms {
		byID[aws.ToString(m.MessageAttributes["event_id"].StringValue)] = m
	}
	ms = ms[:0]
	for i := range 7 {
		id := "E" + strconv.Itoa(i)
		m := byID[id]
		m.Attributes = map[string]string{"MessageGroupId": group[id]}
		ms = append(ms, m)
	}
	leases := newLeases(bc.client, bc.queue.URL, bc.queue.VisibilityTimeout, bc.cfg.HeartbeatInterval, bc.cfg.RequestTimeout, bc.logger)
	st := newSettler(bc.client, bc.queue.URL, leases, bc.cfg.RequestTimeout, settleLinger, 1, bc.logger, &bc.stats)
	bc.process(ctx, ms, leases.add(ms, time.Now()), leases, st)
	st.close() // every settle answered and reported

	require.Len(t, reports, 7)
	got := map[string]ackgap.SettleOutcome{}
	for _, d := range reports {
		s, ok := d.Settlement()
		require.True(t, ok)
		got[d.EventID] = s.Outcome
	}
	require.Equal(t, map[string]ackgap.SettleOutcome{
		"E0": AckDeleted, "E1": AckNacked, "E2": AckNacked, "E3": AckNacked, "E4": AckNacked, "E5": AckDeleted, "E6": AckDeleted,
	}, got)
	mu.Lock()
	defer mu.Unlock()
	require.NotContains(t, ran, "E2", "held back behind E1, which did not unmarshal")
	require.NotContains(t, ran, "E4", "held back behind E3, which failed")
	require.Contains(t, ran, "E0")
	require.Less(t, slices.Index(ran, "E5"), slices.Index(ran, "E6"), "group C in order")
}
