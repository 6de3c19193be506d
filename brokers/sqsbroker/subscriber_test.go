package sqsbroker_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
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

// TestRoundTrip: 200 events and one producer retry (E7 sent twice, so two
// SQS MessageIds for one event id) go through the router and a SQLite
// inbox. Every event is applied once, the retry is a duplicate, every
// message is deleted (the queue is empty), and the event id, trace
// context and other metadata arrive as sent, next to the SQS delivery
// metadata. It measures the end-to-end throughput and the lease headroom.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	const n = 200
	c := client(t)
	name, url := createQueue(t, c, "roundtrip", 30*time.Second, nil)
	pub := newPublisher(t)

	published := time.Now()
	for i := range n {
		require.NoError(t, pub.Publish(name, event(fmt.Sprintf("E%d", i))))
	}
	require.NoError(t, pub.Publish(name, event("E7"))) // a producer's retry
	publishTime := time.Since(published)

	b := newBackend(t)
	o := &observed{}
	sub := newSubscriber(t, name, func(c *sqsbroker.SubscriberConfig) { c.AckObserver = o.observeAck })
	var mu sync.Mutex
	seen := map[string]message.Metadata{}
	start := time.Now()
	rn := runRouter(t, b, sub, router.Config{}, o, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		mu.Lock()
		md := message.Metadata{}
		for k, v := range msg.Metadata {
			md[k] = v
		}
		seen[msg.Metadata.Get(ackgap.MetadataEventIDKey)] = md
		mu.Unlock()
		return apply(ctx, tx, msg)
	})
	acks := o.waitAcks(t, n+1, 60*time.Second)
	elapsed := time.Since(start)
	require.NoError(t, rn.close())

	applied := b.applied(t)
	require.Len(t, applied, n)
	for id, k := range applied {
		require.Equal(t, 1, k, "event %s applied %d times", id, k)
	}
	require.Equal(t, map[ackgap.Outcome]int{ackgap.OutcomeApplied: n, ackgap.OutcomeDuplicate: 1}, o.outcomes())
	for _, a := range acks {
		// A second receive would mean a ReceiveMessage response was lost
		// (see httpclient.go) or a lease lapsed.
		require.Equal(t, 1, a.ReceiveCount, "%+v", a)
		require.Equal(t, sqsbroker.AckDeleted, a.Outcome, "%+v", a)
		require.NoError(t, a.Err)
		require.False(t, a.LeaseExpired(), "%+v", a)
	}
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, 0, visible+inFlight, "queue empty after the round trip")

	md := seen["E42"]
	require.Equal(t, "E42", md.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", md.Get("traceparent"))
	require.Equal(t, "acme", md.Get("tenant"))
	require.NotEmpty(t, md.Get(sqsbroker.MetadataMessageID))
	require.NotEmpty(t, md.Get(sqsbroker.MetadataReceiptHandle))
	require.Equal(t, "1", md.Get(sqsbroker.MetadataReceiveCount))

	lo, hi := headroom(acks)
	t.Logf("published %d messages in %s (%.0f msgs/s, one SendMessage each)", n+1, publishTime.Round(time.Millisecond), float64(n+1)/publishTime.Seconds())
	t.Logf("consumed %d messages end to end (receive, inbox tx, commit, delete) in %s: %.0f msgs/s (Workers %d, MaxNumberOfMessages %d)",
		n+1, elapsed.Round(time.Millisecond), float64(n+1)/elapsed.Seconds(), sub.Config().Workers, sub.Config().MaxNumberOfMessages)
	t.Logf("lease headroom at delete (visibility 30s, heartbeat on): min %s, max %s", lo.Round(time.Millisecond), hi.Round(time.Millisecond))
}

// TestNackRedeliveredAfterNackDelay: a handler failure the router does not
// dead-letter (the store is unavailable) nacks the message; the subscriber
// sets its visibility to NackDelay (1 s), so it comes back after about a
// second, not after the queue's 30 s visibility timeout, with receive
// count 2, and is then applied once.
func TestNackRedeliveredAfterNackDelay(t *testing.T) {
	t.Parallel()
	c := client(t)
	name, url := createQueue(t, c, "nack", 30*time.Second, nil)
	require.NoError(t, newPublisher(t).Publish(name, event("E1")))

	b := newBackend(t)
	o := &observed{}
	sub := newSubscriber(t, name, func(c *sqsbroker.SubscriberConfig) {
		c.AckObserver = o.observeAck
		c.NackDelay = time.Second
	})
	var mu sync.Mutex
	var deliveries []time.Time
	var counts []string
	nackSettled := make(chan ackgap.Settlement, 1)
	runRouter(t, b, sub, router.Config{MaxAttempts: 1}, o, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		if d, ok := ackgap.DeliveryFromContext(ctx); ok && d.ReceiveCount == 1 {
			d.OnSettled(func(s ackgap.Settlement) { nackSettled <- s })
		}
		mu.Lock()
		deliveries = append(deliveries, time.Now())
		counts = append(counts, msg.Metadata.Get(sqsbroker.MetadataReceiveCount))
		first := len(deliveries) == 1
		mu.Unlock()
		if err := apply(ctx, tx, msg); err != nil {
			return err
		}
		if first {
			return fmt.Errorf("billing database: %w", ackgap.ErrStoreUnavailable)
		}
		return nil
	})
	acks := o.waitAcks(t, 2, 15*time.Second)
	require.Equal(t, sqsbroker.AckNacked, acks[0].Outcome)
	require.NoError(t, acks[0].Err)
	require.Equal(t, sqsbroker.AckDeleted, acks[1].Outcome)
	st := <-nackSettled
	require.False(t, st.Acked, "the Delivery hook reports the nack")
	require.NoError(t, st.Err)

	mu.Lock()
	gap := deliveries[1].Sub(acks[0].Settled)
	require.Equal(t, []string{"1", "2"}, counts)
	mu.Unlock()
	require.GreaterOrEqual(t, gap, 900*time.Millisecond, "not before NackDelay")
	require.Less(t, gap, 20*time.Second, "after NackDelay (1s), not after the 30s visibility timeout")
	require.Equal(t, map[string]int{"E1": 1}, b.applied(t))
	require.Equal(t, map[ackgap.Outcome]int{ackgap.OutcomeFailed: 1, ackgap.OutcomeApplied: 1}, o.outcomes())
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, 0, visible+inFlight)
	t.Logf("nacked message redelivered %s after the nack (NackDelay 1s, visibility timeout 30s)", gap.Round(time.Millisecond))
}

// TestS11VisibilityExpiresMidProcessing (case S11): visibility 2 s, a
// handler that takes 3 s, two subscribers (two routers, one inbox) on one
// queue. With the heartbeat on, the lease is extended while the handler
// runs: one delivery, applied once, no duplicate, positive headroom. With
// the heartbeat off, the lease lapses at 2 s, the second subscriber
// receives the message while the first still runs, the inbox absorbs that
// copy (state changed once, one duplicate), and the first subscriber's
// delete with its stale receipt handle is not an error.
func TestS11VisibilityExpiresMidProcessing(t *testing.T) {
	t.Parallel()
	for _, heartbeat := range []bool{true, false} {
		t.Run(fmt.Sprintf("heartbeat=%v", heartbeat), func(t *testing.T) {
			t.Parallel()
			c := client(t)
			name, url := createQueue(t, c, "s11", 2*time.Second, nil)
			b := newBackend(t)
			o := &observed{}
			var handlerRuns atomic.Int32
			var settledMu sync.Mutex
			var settled []ackgap.Settlement
			slow := func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
				handlerRuns.Add(1)
				d, ok := ackgap.DeliveryFromContext(ctx)
				require.True(t, ok, "the subscriber fills the ackgap.Delivery hook")
				require.Equal(t, ackgap.ConfirmationReported, d.Confirmation)
				require.Equal(t, msg.Metadata.Get(sqsbroker.MetadataMessageID), d.MessageID)
				require.False(t, d.LeaseDeadline.IsZero())
				d.OnSettled(func(s ackgap.Settlement) {
					settledMu.Lock()
					settled = append(settled, s)
					settledMu.Unlock()
				})
				if err := apply(ctx, tx, msg); err != nil {
					return err
				}
				time.Sleep(3 * time.Second)
				return nil
			}
			var routers []*running
			for range 2 {
				sub := newSubscriber(t, name, func(c *sqsbroker.SubscriberConfig) {
					c.AckObserver = o.observeAck
					c.DisableHeartbeat = !heartbeat
					c.Workers = 1
					// The lease (2 s) is shorter than the handler (3 s) on
					// purpose: this is the failure S11 is about.
					c.VisibilityFactor = 0.4
				})
				routers = append(routers, runRouter(t, b, sub, router.Config{}, o, slow))
			}
			start := time.Now()
			require.NoError(t, newPublisher(t).Publish(name, event("E1")))

			if heartbeat {
				o.waitAcks(t, 1, 15*time.Second)
			} else {
				o.waitAcks(t, 2, 15*time.Second)
			}
			for _, rn := range routers {
				require.NoError(t, rn.close())
			}
			acks := o.ackReports()
			require.Equal(t, map[string]int{"E1": 1}, b.applied(t), "state changed once")
			visible, inFlight := queueCounts(t, c, url)
			require.Equal(t, 0, visible+inFlight, "message deleted")

			if heartbeat {
				require.Len(t, acks, 1, "one delivery")
				require.Equal(t, int32(1), handlerRuns.Load())
				require.Equal(t, map[ackgap.Outcome]int{ackgap.OutcomeApplied: 1}, o.outcomes())
				a := acks[0]
				require.Equal(t, sqsbroker.AckDeleted, a.Outcome)
				require.False(t, a.LeaseExpired())
				require.GreaterOrEqual(t, a.Extensions, 3, "extended about every 667ms for 3s")
				require.Positive(t, a.LeaseHeadroom())
				settledMu.Lock()
				require.Len(t, settled, 1)
				require.True(t, settled[0].Acked)
				require.NoError(t, settled[0].Err)
				require.Equal(t, a.Confirmed, settled[0].Confirmed, "Delivery reports when SQS confirmed the delete")
				require.Equal(t, a.LeaseDeadline, settled[0].LeaseDeadline, "and the lease as last extended")
				settledMu.Unlock()
				t.Logf("heartbeat on: 1 delivery, %d extensions, handler+delete took %s, lease headroom at delete %s",
					a.Extensions, a.Confirmed.Sub(start).Round(time.Millisecond), a.LeaseHeadroom().Round(time.Millisecond))
				return
			}
			require.Len(t, acks, 2, "two deliveries")
			require.Equal(t, map[ackgap.Outcome]int{ackgap.OutcomeApplied: 1, ackgap.OutcomeDuplicate: 1}, o.outcomes())
			first, second := acks[0], acks[1]
			if first.ReceiveCount > second.ReceiveCount {
				first, second = second, first
			}
			require.Equal(t, []int{1, 2}, []int{first.ReceiveCount, second.ReceiveCount})
			for _, a := range acks {
				require.NoError(t, a.Err, "a stale receipt handle is not an error")
				require.Contains(t, []ackgap.SettleOutcome{sqsbroker.AckDeleted, sqsbroker.AckStale}, a.Outcome)
			}
			require.True(t, first.LeaseExpired(), "the first delivery's lease ran out before its delete")
			require.Negative(t, first.LeaseHeadroom())
			require.Zero(t, first.Extensions)
			require.True(t, second.Received.Before(first.Settled), "the copy arrived while the first handler ran")
			require.False(t, second.LeaseExpired())
			// The copy never reached the handler (the inbox skipped it), so
			// only the first delivery's settlement was observed here.
			settledMu.Lock()
			require.Len(t, settled, 1)
			require.True(t, settled[0].Acked)
			require.ErrorIs(t, settled[0].Err, ackgap.ErrAckNotConfirmed, "a delete after the lease ran out is not a confirmation")
			require.True(t, settled[0].Confirmed.IsZero())
			settledMu.Unlock()
			t.Logf("heartbeat off: 2 deliveries; copy received %s after the first; first delete %s (lease headroom %s), copy deleted as duplicate (headroom %s)",
				second.Received.Sub(first.Received).Round(time.Millisecond), first.Outcome,
				first.LeaseHeadroom().Round(time.Millisecond), second.LeaseHeadroom().Round(time.Millisecond))
		})
	}
}

// TestBatchWaitsItsTurn: ten messages received in one batch
// (MaxNumberOfMessages 10) by one worker, 400 ms each, on a queue with a
// 2 s visibility timeout: the last one waits 3.6 s for its turn. The
// heartbeat keeps every one of them leased: each is delivered once,
// applied once, and deleted before its lease deadline.
func TestBatchWaitsItsTurn(t *testing.T) {
	t.Parallel()
	const n = 10
	c := client(t)
	name, url := createQueue(t, c, "batch", 2*time.Second, nil)
	pub := newPublisher(t)
	for i := range n {
		require.NoError(t, pub.Publish(name, event("E"+strconv.Itoa(i))))
	}
	b := newBackend(t)
	o := &observed{}
	sub := newSubscriber(t, name, func(c *sqsbroker.SubscriberConfig) {
		c.AckObserver = o.observeAck
		c.Workers = 1
		c.MaxNumberOfMessages = 10
		c.AttemptTimeout = time.Second
		c.VisibilityFactor = 2
	})
	runRouter(t, b, sub, router.Config{HandlerTimeout: time.Second}, o, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		time.Sleep(400 * time.Millisecond)
		return apply(ctx, tx, msg)
	})
	acks := o.waitAcks(t, n, 20*time.Second)
	time.Sleep(500 * time.Millisecond) // room for a redelivery to show up
	acks = o.ackReports()
	t.Cleanup(func() {
		if t.Failed() {
			for _, a := range acks {
				t.Logf("%s count=%d batch=%d handedOut=+%s confirmed=+%s deadline=+%s ext=%d lost=%v outcome=%s",
					a.EventID, a.ReceiveCount, a.BatchSize, a.HandedOut.Sub(a.Received), a.Confirmed.Sub(a.Received),
					a.LeaseDeadline.Sub(a.Received), a.Extensions, a.LeaseLost, a.Outcome)
			}
		}
	})
	require.Len(t, acks, n, "no redelivery")
	for _, a := range acks {
		require.Equal(t, n, a.BatchSize, "all ten came in one ReceiveMessage response")
		require.Equal(t, 1, a.ReceiveCount)
		require.Equal(t, sqsbroker.AckDeleted, a.Outcome)
		require.False(t, a.LeaseExpired(), "%+v", a)
	}
	last := acks[n-1]
	require.Greater(t, last.HandedOut.Sub(last.Received), 2*time.Second, "the last one waited longer than the visibility timeout")
	require.GreaterOrEqual(t, last.Extensions, 5)
	require.Equal(t, map[ackgap.Outcome]int{ackgap.OutcomeApplied: n}, o.outcomes())
	require.Len(t, b.applied(t), n)
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, 0, visible+inFlight)
	lo, hi := headroom(acks)
	t.Logf("batch of 10: last waited %s for its turn, %d extensions; lease headroom at delete min %s max %s",
		last.HandedOut.Sub(last.Received).Round(time.Millisecond), last.Extensions, lo.Round(time.Millisecond), hi.Round(time.Millisecond))
}

// TestDeadLetterQueue: a permanent failure goes through the router's
// dead-letter path to an SQS dead-letter queue (NewDeadLetterPublisher,
// whatever the router's DeadLetterTopic), with its event id, trace
// context, reason and payload as sent; the source message is deleted.
func TestDeadLetterQueue(t *testing.T) {
	t.Parallel()
	c := client(t)
	name, url := createQueue(t, c, "src", 30*time.Second, nil)
	dlqName, dlqURL := createQueue(t, c, "dlq", 30*time.Second, nil)
	dlq, err := sqsbroker.NewDeadLetterPublisher(context.Background(), &sqsbroker.PublisherConfig{OptFns: optFns(t)}, dlqName, testLogger())
	require.NoError(t, err)

	b := newBackend(t)
	o := &observed{}
	sub := newSubscriber(t, name, func(c *sqsbroker.SubscriberConfig) { c.AckObserver = o.observeAck })
	runRouter(t, b, sub, router.Config{DeadLetter: dlq}, o, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		return ackgap.Permanent("account_closed", nil)
	})
	require.NoError(t, newPublisher(t).Publish(name, event("E1")))
	o.waitAcks(t, 1, 15*time.Second)

	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(dlqURL), WaitTimeSeconds: 5, MessageAttributeNames: []string{"All"},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	m, err := sqsbroker.Marshaler{}.Unmarshal(&out.Messages[0])
	require.NoError(t, err)
	require.Equal(t, "E1", m.Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, "account_closed", m.Metadata.Get(ackgap.MetadataDeadLetterReason))
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", m.Metadata.Get("traceparent"))
	require.NotEmpty(t, m.Metadata.Get("reason_poisoned"))
	require.Equal(t, `{"id":"E1"}`, string(m.Payload))
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, 0, visible+inFlight, "source message deleted after the dead-letter publish")
	require.Equal(t, map[ackgap.Outcome]int{ackgap.OutcomeFailed: 1}, o.outcomes())
	require.Empty(t, b.applied(t))
}

// TestRedrivePolicy: repeated transient failures are left to the queue's
// redrive policy. With maxReceiveCount 2 and every attempt nacked, the
// handler sees the message twice and SQS then moves it, attributes
// intact, to the dead-letter queue.
func TestRedrivePolicy(t *testing.T) {
	t.Parallel()
	c := client(t)
	dlqName, dlqURL := createQueue(t, c, "redrive-dlq", 30*time.Second, nil)
	_ = dlqName
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, queueArn(t, c, dlqURL))
	name, url := createQueue(t, c, "redrive", 30*time.Second, map[string]string{"RedrivePolicy": policy})

	b := newBackend(t)
	o := &observed{}
	sub := newSubscriber(t, name, func(c *sqsbroker.SubscriberConfig) { c.AckObserver = o.observeAck })
	require.Equal(t, 2, sub.Queue().MaxReceiveCount)
	require.Equal(t, queueArn(t, c, dlqURL), sub.Queue().DeadLetterTargetARN)
	var attempts atomic.Int32
	runRouter(t, b, sub, router.Config{MaxAttempts: 1}, o, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		attempts.Add(1)
		return fmt.Errorf("ledger: %w", ackgap.ErrStoreUnavailable)
	})
	require.NoError(t, newPublisher(t).Publish(name, event("E1")))

	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(dlqURL), WaitTimeSeconds: 10, MessageAttributeNames: []string{"All"},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1, "moved to the dead-letter queue by the redrive policy")
	m, err := sqsbroker.Marshaler{}.Unmarshal(&out.Messages[0])
	require.NoError(t, err)
	require.Equal(t, "E1", m.Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, int32(2), attempts.Load(), "received maxReceiveCount times, then redriven")
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, 0, visible+inFlight)
	require.Empty(t, b.applied(t))
}

// TestCloseDrains: Close while a message is in the handler lets it finish,
// commit and be deleted (its context is not cancelled), and releases the
// messages of its batch that were not handed out, at once (visibility 0)
// rather than after the visibility timeout.
func TestCloseDrains(t *testing.T) {
	t.Parallel()
	c := client(t)
	name, url := createQueue(t, c, "close", 30*time.Second, nil)
	pub := newPublisher(t)
	for i := range 3 {
		require.NoError(t, pub.Publish(name, event("E"+strconv.Itoa(i))))
	}
	b := newBackend(t)
	o := &observed{}
	sub := newSubscriber(t, name, func(c *sqsbroker.SubscriberConfig) {
		c.AckObserver = o.observeAck
		c.Workers = 1
	})
	inHandler := make(chan struct{}, 3)
	rn := runRouter(t, b, sub, router.Config{}, o, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		inHandler <- struct{}{}
		time.Sleep(time.Second)
		if err := ctx.Err(); err != nil {
			return err
		}
		return apply(ctx, tx, msg)
	})
	<-inHandler
	require.NoError(t, rn.close())
	_, err := sub.Subscribe(context.Background(), name)
	require.ErrorContains(t, err, "subscriber closed")

	acks := o.ackReports()
	require.Len(t, acks, 3)
	outcomes := map[ackgap.SettleOutcome]int{}
	for _, a := range acks {
		outcomes[a.Outcome]++
	}
	// The delete is answered in the background, the releases at once: the
	// reports come in either order.
	require.Equal(t, map[ackgap.SettleOutcome]int{sqsbroker.AckDeleted: 1, sqsbroker.AckReleased: 2}, outcomes,
		"the in-flight message finished and was deleted; the two waiting ones were released")
	require.Len(t, b.applied(t), 1)
	visible, inFlight := queueCounts(t, c, url)
	require.Equal(t, 2, visible, "the two released messages are visible at once")
	require.Equal(t, 0, inFlight)
}

// TestFIFONackKeepsGroupOrder: on a FIFO queue, a nacked message is not
// overtaken by the later messages of its group: the group resumes from the
// nacked one after NackDelay. (fauxqs hands out one message per group per
// ReceiveMessage; real SQS may return several of a group in one batch, and
// then the subscriber releases the ones after a nacked one:
// TestFIFOReleaseAfterNack covers that path.)
func TestFIFONackKeepsGroupOrder(t *testing.T) {
	t.Parallel()
	c := client(t)
	_, url := createQueue(t, c, "order", 30*time.Second, map[string]string{"FifoQueue": "true"})
	for i := range 3 {
		m, err := sqsbroker.Marshaler{}.Marshal(event("E" + strconv.Itoa(i)))
		require.NoError(t, err)
		_, err = c.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(url), MessageBody: m.Body, MessageAttributes: m.MessageAttributes,
			MessageGroupId: aws.String("order-1"), MessageDeduplicationId: aws.String("E" + strconv.Itoa(i)),
		})
		require.NoError(t, err)
	}

	b := newBackend(t)
	o := &observed{}
	sub := newSubscriber(t, url, func(c *sqsbroker.SubscriberConfig) {
		c.AckObserver = o.observeAck
		c.Workers = 2
	})
	require.True(t, sub.Queue().FIFO)
	var mu sync.Mutex
	var order []string
	runRouter(t, b, sub, router.Config{MaxAttempts: 1}, o, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		mu.Lock()
		order = append(order, id)
		first := len(order) == 1
		mu.Unlock()
		if first {
			return fmt.Errorf("ledger: %w", ackgap.ErrStoreUnavailable)
		}
		return apply(ctx, tx, msg)
	})
	eventually(t, 15*time.Second, "three events applied", func() bool { return len(b.applied(t)) == 3 })
	mu.Lock()
	require.Equal(t, []string{"E0", "E0", "E1", "E2"}, order, "E1 and E2 never overtook the nacked E0")
	mu.Unlock()
}
