package sqsbroker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/middleware"
)

// receiveRecorder is an SQS HTTP client that records the
// MessageSystemAttributeNames of every ReceiveMessage request.
type receiveRecorder struct {
	next sqs.HTTPClient
	mu   sync.Mutex
	asks [][]string
}

func (r *receiveRecorder) Do(req *http.Request) (*http.Response, error) {
	if req.Header.Get("X-Amz-Target") == "AmazonSQS.ReceiveMessage" && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var in struct{ MessageSystemAttributeNames []string }
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.asks = append(r.asks, in.MessageSystemAttributeNames)
		r.mu.Unlock()
	}
	return r.next.Do(req)
}

func (r *receiveRecorder) requested() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.asks...)
}

// recordingOptFns is optFns with every request going through a
// receiveRecorder.
func recordingOptFns(t *testing.T) ([]func(*sqs.Options), *receiveRecorder) {
	rec := &receiveRecorder{}
	return append(optFns(t), func(o *sqs.Options) {
		rec.next = o.HTTPClient
		o.HTTPClient = rec
	}), rec
}

// TestReceiveAsksOnlyForReadAttributes: the BatchConsumer and the
// Subscriber ask ReceiveMessage for the two system attributes they read
// (ApproximateReceiveCount, MessageGroupId), not for all of them; the
// Delivery still has the receive count and, on a FIFO queue, the group as
// its key.
func TestReceiveAsksOnlyForReadAttributes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client(t)
	want := []string{"ApproximateReceiveCount", "MessageGroupId"}

	t.Run("BatchConsumer", func(t *testing.T) {
		t.Parallel()
		name, _ := createQueue(t, c, "attrs-batch", 30*time.Second, map[string]string{"FifoQueue": "true"})
		pub := newPublisher(t)
		require.NoError(t, pub.Publish(name, fifoEvent("A1", "group-a", 1), fifoEvent("A2", "group-a", 2)))
		b := newPGBackend(t)
		var mu sync.Mutex
		type seen struct {
			count  int
			key    string
			hasKey bool
		}
		var deliveries []seen
		p, err := batch.New(b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "c1"},
			Handler: func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
				d, _ := ackgap.DeliveryFromContext(ctx)
				mu.Lock()
				deliveries = append(deliveries, seen{d.ReceiveCount, d.Key, d.HasKey})
				mu.Unlock()
				return applyPG(ctx, tx, msg)
			}})
		require.NoError(t, err)
		fns, rec := recordingOptFns(t)
		bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, &sqsbroker.SubscriberConfig{
			OptFns: fns, Queue: name, AttemptTimeout: 5 * time.Second, WaitTimeSeconds: 1, Workers: 1,
		}, testLogger())
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- bc.Run(ctx) }()
		eventually(t, 20*time.Second, "both events applied", func() bool { return len(b.applied(t)) == 2 })
		require.NoError(t, bc.Close())
		require.NoError(t, <-done)

		asks := rec.requested()
		require.NotEmpty(t, asks)
		for _, a := range asks {
			require.Equal(t, want, a)
		}
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, deliveries, 2)
		for _, d := range deliveries {
			require.Equal(t, 1, d.count, "ApproximateReceiveCount read")
			require.True(t, d.hasKey)
			require.Equal(t, "group-a", d.key, "MessageGroupId read")
		}
	})

	t.Run("Subscriber", func(t *testing.T) {
		t.Parallel()
		name, _ := createQueue(t, c, "attrs-sub", 30*time.Second, nil)
		pub := newPublisher(t)
		require.NoError(t, pub.Publish(name, event("S1")))
		fns, rec := recordingOptFns(t)
		sub := newSubscriber(t, name, func(cfg *sqsbroker.SubscriberConfig) { cfg.OptFns = fns; cfg.WaitTimeSeconds = 1 })
		msgs, err := sub.Subscribe(ctx, name)
		require.NoError(t, err)
		select {
		case msg := <-msgs:
			require.Equal(t, "1", msg.Metadata.Get(sqsbroker.MetadataReceiveCount))
			msg.Ack()
		case <-time.After(20 * time.Second):
			t.Fatal("no message within 20s")
		}
		require.NoError(t, sub.Close())
		asks := rec.requested()
		require.NotEmpty(t, asks)
		for _, a := range asks {
			require.Equal(t, want, a)
		}
	})
}
