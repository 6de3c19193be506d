package sqsbroker_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/brokers/sqsbroker"
)

// TestCloseReleasesWhatLongPollsBring: messages that reach a consumer's
// long polls after Close began are made visible again at once, not left
// invisible for the queue's visibility timeout (5 minutes here). Every
// receive loop is in a long poll (20 s) when n messages are sent with a
// delay of 2 s and Close is called at once, so the messages become
// visible while the polls are still pending at the server. A poll that
// the client cancels at the stop is still answered by the server
// (fauxqs, like SQS: aws/aws-sdk-go-v2#2068) with messages nobody reads;
// the consumer must instead let its polls finish and release what they
// bring. Then a fresh receiver must get every message that was not handed
// out, within a tenth of the visibility timeout, and the BatchConsumer
// must have released every message it received and did not hand out.
// Run for the BatchConsumer (4 Pollers) and the Subscriber (4 Workers).
func TestCloseReleasesWhatLongPollsBring(t *testing.T) {
	t.Parallel()
	const (
		n          = 20
		loops      = 4
		visibility = 5 * time.Minute
		delay      = 2 // seconds
	)
	for _, kind := range []string{"batch-consumer", "subscriber"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := client(t)
			name, url := createQueue(t, c, "close-poll", visibility, nil)
			tap := newSQSTap(t)
			cfg := &sqsbroker.SubscriberConfig{
				OptFns: tap.optFns(t), Queue: name, AttemptTimeout: 5 * time.Second,
				WaitTimeSeconds: 20, CloseTimeout: 25 * time.Second, Workers: loops, Pollers: loops,
			}
			var handed atomic.Int64 // messages handed out before the stop (acked, so deleted)
			var closeAll func() error
			var stats func() sqsbroker.BatchConsumerStats
			switch kind {
			case "batch-consumer":
				bc, err := sqsbroker.NewBatchConsumer(ctx, func(_ context.Context, msgs []*message.Message) []error {
					handed.Add(int64(len(msgs)))
					return make([]error, len(msgs))
				}, cfg, testLogger())
				require.NoError(t, err)
				done := make(chan error, 1)
				go func() { done <- bc.Run(ctx) }()
				closeAll = func() error { return errors.Join(bc.Close(), <-done) }
				stats = bc.Stats
			case "subscriber":
				sub, err := sqsbroker.NewSubscriber(ctx, cfg, testLogger())
				require.NoError(t, err)
				msgs, err := sub.Subscribe(ctx, name)
				require.NoError(t, err)
				drained := make(chan struct{})
				go func() {
					defer close(drained)
					for m := range msgs {
						handed.Add(1)
						m.Ack()
					}
				}()
				closeAll = func() error {
					err := sub.Close()
					<-drained
					return err
				}
			}
			eventually(t, 30*time.Second, "every receive loop in a long poll", func() bool {
				tap.mu.Lock()
				defer tap.mu.Unlock()
				return tap.receiving == loops
			})

			sent := map[string]bool{}
			for start := 0; start < n; start += 10 {
				var entries []types.SendMessageBatchRequestEntry
				for i := start; i < min(start+10, n); i++ {
					entries = append(entries, types.SendMessageBatchRequestEntry{
						Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("m" + strconv.Itoa(i)), DelaySeconds: delay,
					})
				}
				out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				require.NoError(t, err)
				require.Empty(t, out.Failed)
				for _, s := range out.Successful {
					sent[aws.ToString(s.MessageId)] = true
				}
			}
			require.NoError(t, closeAll())

			// Every message not handed out comes back at once, not after
			// the visibility timeout.
			want := n - int(handed.Load())
			got := map[string]bool{}
			deadline := time.Now().Add(visibility / 10)
			for len(got) < want && time.Now().Before(deadline) {
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
					QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: int32(visibility / time.Second),
				})
				require.NoError(t, err)
				for _, m := range out.Messages {
					id := aws.ToString(m.MessageId)
					require.True(t, sent[id], "message %s was never sent", id)
					got[id] = true
				}
			}
			visible, inFlight := queueCounts(t, c, url)
			require.Len(t, got, want, "every message not handed out before the stop received again within %s (handed out %d; queue now: %d visible, %d in flight)",
				visibility/10, handed.Load(), visible, inFlight)
			if stats != nil {
				// A message that became visible once every poll had ended was
				// never received: Released may be below want.
				st := stats()
				require.Equal(t, st.Received, handed.Load()+st.Released, "every message received was handed out or released: %+v", st)
				t.Logf("%+v", st)
			}
			t.Logf("%s: %d handed out before the stop, %d received again", kind, handed.Load(), want)
		})
	}
}
