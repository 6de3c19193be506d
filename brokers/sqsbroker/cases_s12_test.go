package sqsbroker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/middleware"
)

var errE3Handler = errors.New("E3: order service rejected the request")

// TestS12PartialBatchFailure is case S12 (partial batch failure, from
// aws-powertools/powertools-lambda-java #119, softwareengineering
// Stack Exchange question 432778, LeanerCloud/CUDly #1574): "batch of 5 =
// E1..E5; E3's handler returns an error. Expected with partial batch
// response: response lists only E3 as failed; E1, E2, E4, E5 committed in
// DB and removed. Variant (whole batch redelivered, e.g. misconfigured
// event source): E1, E2, E4, E5 skipped (duplicates_skipped=4), E3
// retried. After maxReceiveCount only E3 reaches the DLQ. Final: every
// event applied once."
//
// On fauxqs and PostgreSQL, through a BatchConsumer (one transaction per
// receive batch). E3's handler fails with an ordinary handler error, not
// an unavailable store. Partial: E3 fails every time, so the queue's
// redrive policy (maxReceiveCount 2) moves it, and only it, to the
// dead-letter queue. Whole batch: a BatchFunc that fails every message of
// a batch in which one failed stands for the misconfigured event source;
// E3 fails once, and the redelivered batch's other events are duplicates.
func TestS12PartialBatchFailure(t *testing.T) {
	t.Parallel()
	for _, wholeBatch := range []bool{false, true} {
		name := "partial batch response"
		if wholeBatch {
			name = "whole batch redelivered"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := client(t)
			_, dlqURL := createQueue(t, c, "s12-dlq", 30*time.Second, nil)
			policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, queueArn(t, c, dlqURL))
			queue, url := createQueue(t, c, "s12", 30*time.Second, map[string]string{"RedrivePolicy": policy})
			pub := newPublisher(t)
			for i := 1; i <= 5; i++ {
				require.NoError(t, pub.Publish(queue, event(fmt.Sprintf("E%d", i))))
			}

			b := newPGBackend(t)
			var mu sync.Mutex
			e3Failures := 0
			outcomes := map[string][]ackgap.Outcome{}
			p, err := batch.New(b.store, &batch.Config[pgx.Tx]{
				InboxConfig: middleware.InboxConfig{Consumer: "c1", Observer: func(_ context.Context, r *ackgap.InboxReport) {
					mu.Lock()
					outcomes[r.EventID] = append(outcomes[r.EventID], r.Outcome)
					mu.Unlock()
				}},
				Handler: func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
					id, _ := ackgap.EventIDFromContext(ctx)
					if err := applyPG(ctx, tx, msg); err != nil {
						return err
					}
					mu.Lock()
					defer mu.Unlock()
					if id == "E3" && (!wholeBatch || e3Failures == 0) {
						e3Failures++
						return errE3Handler
					}
					return nil
				},
			})
			require.NoError(t, err)
			var e3BatchSize int // the size of the first batch that held E3
			run := func(ctx context.Context, msgs []*message.Message) []error {
				errs := p.ProcessErrors(ctx, msgs)
				mu.Lock()
				for _, m := range msgs {
					if m.Metadata.Get(ackgap.MetadataEventIDKey) == "E3" && e3BatchSize == 0 {
						e3BatchSize = len(msgs)
					}
				}
				mu.Unlock()
				if !wholeBatch {
					return errs
				}
				var failed error
				for _, err := range errs {
					if err != nil {
						failed = err
					}
				}
				if failed == nil {
					return errs
				}
				for i := range errs {
					errs[i] = failed
				}
				return errs
			}
			bc, err := sqsbroker.NewBatchConsumer(ctx, run, &sqsbroker.SubscriberConfig{
				OptFns: optFns(t), Queue: queue, AttemptTimeout: 5 * time.Second, WaitTimeSeconds: 1, Workers: 1,
			}, testLogger())
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- bc.Run(ctx) }()
			t.Cleanup(func() { _ = bc.Close() })

			eventually(t, 60*time.Second, "the queue to drain", func() bool {
				visible, inFlight := queueCounts(t, c, url)
				mu.Lock()
				defer mu.Unlock()
				return visible == 0 && inFlight == 0 && len(outcomes) == 5
			})
			require.NoError(t, bc.Close())
			require.NoError(t, <-done)

			// What reached the dead-letter queue.
			var dead []string
			for {
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlqURL), MaxNumberOfMessages: 10,
					MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1, VisibilityTimeout: 30})
				require.NoError(t, err)
				if len(out.Messages) == 0 {
					break
				}
				for _, m := range out.Messages {
					dead = append(dead, aws.ToString(m.MessageAttributes[ackgap.MetadataEventIDKey].StringValue))
				}
			}

			mu.Lock()
			defer mu.Unlock()
			// The case is a batch in which E3 fails beside others: a
			// batch of E3 alone would pass every assertion below without
			// a partial batch response or a redelivered batch's
			// duplicates (the five were sent before the consumer started,
			// and one receive takes up to ten).
			require.GreaterOrEqual(t, e3BatchSize, 2, "E3 shared its first batch with other events")
			t.Logf("E3's first batch held %d messages", e3BatchSize)
			if !wholeBatch {
				require.Equal(t, []string{"E3"}, dead, "after maxReceiveCount only E3 reaches the dead-letter queue")
				require.Equal(t, map[string]int{"E1": 1, "E2": 1, "E4": 1, "E5": 1}, b.applied(t),
					"E1, E2, E4, E5 committed once and removed; E3 never committed")
				require.Equal(t, 2, e3Failures, "E3 received maxReceiveCount times")
				for _, id := range []string{"E1", "E2", "E4", "E5"} {
					require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, outcomes[id], "%s not run again", id)
				}
				return
			}
			require.Empty(t, dead)
			require.Equal(t, map[string]int{"E1": 1, "E2": 1, "E3": 1, "E4": 1, "E5": 1}, b.applied(t), "every event applied once")
			duplicates := 0
			for _, id := range []string{"E1", "E2", "E4", "E5"} {
				seq := outcomes[id]
				require.Equal(t, ackgap.OutcomeApplied, seq[0], "%s: %v", id, seq)
				for _, o := range seq[1:] {
					require.Equal(t, ackgap.OutcomeDuplicate, o, "%s: %v", id, seq)
					duplicates++
				}
			}
			require.Equal(t, e3BatchSize-1, duplicates, "duplicates_skipped: the redelivered batch's other events")
		})
	}
}
