package kafkabroker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

// applyHandler applies every event.
func applyHandler[TTx any](b backend[TTx]) router.HandlerFunc[TTx] {
	return func(ctx context.Context, tx TTx, msg *message.Message) error {
		return b.apply(ctx, tx, msg.Metadata.Get(ackgap.MetadataEventIDKey))
	}
}

func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(60 * time.Second):
		t.Fatalf("timed out after 60s waiting for %s", what)
	}
}

// TestAckGapCrash: the inbox commits, then the process dies before the ack
// reaches Kafka (a middleware outside the whole chain holds the message
// unacked until the shutdown cancels it, so no offset is committed). A new
// subscriber in the same group gets the message again; the inbox reports
// it as a duplicate (nothing written) and acks it: the state changed once
// (docs/design.md invariant 1).
func TestAckGapCrash(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testAckGapCrash(t, sqliteBackend(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testAckGapCrash(t, pgBackend(t))
	})
}

func testAckGapCrash[TTx any](t *testing.T, b backend[TTx]) {
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)
	require.NoError(t, pub.Publish(topic, event(t, "evt-crash", "order-7")))
	rep := &reports{}

	committed := make(chan struct{})
	var once sync.Once
	dieInAckGap := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err != nil {
				return out, err
			}
			once.Do(func() { close(committed) })
			<-msg.Context().Done() // never acks; the shutdown cancels it
			return nil, msg.Context().Err()
		}
	}
	r1, err := router.New(b.store, &router.Config{
		DeadLetter: pub, DeadLetterTopic: topic + ".dlq", InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger(),
		Middlewares: []message.HandlerMiddleware{dieInAckGap},
	})
	require.NoError(t, err)
	sub1 := newSubscriber(t, group, func(c *kafkabroker.SubscriberConfig) { c.CloseTimeout = 300 * time.Millisecond })
	require.NoError(t, r1.AddHandler("billing", topic, sub1, applyHandler(b)))
	rn1 := start(t, r1)
	waitClosed(t, committed, "the first delivery to commit")
	require.Equal(t, map[string]int{"evt-crash": 1}, b.applied(t))
	require.NoError(t, rn1.close())
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, rep.outcomes("evt-crash"))

	r2, err := router.New(b.store, &router.Config{
		DeadLetter: pub, DeadLetterTopic: topic + ".dlq", InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger(),
	})
	require.NoError(t, err)
	require.NoError(t, r2.AddHandler("billing", topic, newSubscriber(t, group, nil), applyHandler(b)))
	rn2 := start(t, r2)
	eventually(t, 60*time.Second, "the redelivery", func() bool { return len(rep.outcomes("evt-crash")) == 2 })
	require.NoError(t, rn2.close())

	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate}, rep.outcomes("evt-crash"))
	require.Equal(t, map[string]int{"evt-crash": 1}, b.applied(t), "state changed once")
	require.Zero(t, topicSize(t, topic+".dlq"))
	assertNothingRedelivered(t, topic, group) // the duplicate was acked
}

// TestPoisonToDeadLetter: a handler returning ackgap.Permanent sends the
// message to the dead-letter topic with its reason in header
// ackgap_dead_letter_reason (and the event id, trace context and
// Watermill's poison headers), rolls its transaction back and acks it; the
// next message of the same partition is then processed.
func TestPoisonToDeadLetter(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	topic, group := unique("orders"), unique("billing")
	dlqTopic := topic + ".dlq"
	pub := newPublisher(t)
	poison := event(t, "evt-poison", "order-9")
	require.NoError(t, pub.Publish(topic, poison, event(t, "evt-after", "order-9")))

	rep := &reports{}
	r, err := router.New(b.store, &router.Config{
		DeadLetter: pub, DeadLetterTopic: dlqTopic, InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger(),
	})
	require.NoError(t, err)
	var mu sync.Mutex
	partitions := map[string]int32{}
	require.NoError(t, r.AddHandler("billing", topic, newSubscriber(t, group, nil), func(ctx context.Context, tx TTxSQL, msg *message.Message) error {
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		p, _ := kafkabroker.PartitionFromContext(ctx)
		mu.Lock()
		partitions[id] = p
		mu.Unlock()
		if err := b.apply(ctx, tx, id); err != nil {
			return err
		}
		if id == "evt-poison" {
			return ackgap.Permanent("negative_amount", errors.New("amount -5 is below zero"))
		}
		return nil
	}))
	rn := start(t, r)
	eventually(t, 60*time.Second, "the message after the poison", func() bool { return len(rep.outcomes("evt-after")) == 1 })
	require.NoError(t, rn.close())

	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed}, rep.outcomes("evt-poison"), "tried once, not retried")
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, rep.outcomes("evt-after"))
	require.Equal(t, partitions["evt-poison"], partitions["evt-after"], "same partition")
	require.Equal(t, map[string]int{"evt-after": 1}, b.applied(t), "the poison's write was rolled back")

	dead := readAll(t, dlqTopic, 1)[0]
	require.Equal(t, "negative_amount", dead.Metadata.Get(ackgap.MetadataDeadLetterReason))
	require.Equal(t, "evt-poison", dead.Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, poison.Metadata.Get("traceparent"), dead.Metadata.Get("traceparent"))
	require.Equal(t, topic, dead.Metadata.Get("topic_poisoned"))
	require.Contains(t, dead.Metadata.Get("reason_poisoned"), "amount -5 is below zero")
	require.Equal(t, string(poison.Payload), string(dead.Payload))
	require.Equal(t, int64(1), topicSize(t, dlqTopic))
	assertNothingRedelivered(t, topic, group) // the poison was acked
}

// TestShutdownIsNotPoison: a handler still running when Close's wait ends
// has its context cancelled; the router rolls it back and nacks it but
// never dead-letters it (router.DeadLetterable), and a restart in the
// same group processes it.
func TestShutdownIsNotPoison(t *testing.T) {
	t.Parallel()
	b := pgBackend(t)
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)
	require.NoError(t, pub.Publish(topic, event(t, "evt-slow", "order-3")))
	rep := &reports{}
	newRouter := func() *router.Router[TTxPG] {
		r, err := router.New(b.store, &router.Config{
			DeadLetter: pub, DeadLetterTopic: topic + ".dlq", InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger(),
		})
		require.NoError(t, err)
		return r
	}

	entered := make(chan struct{})
	r1 := newRouter()
	sub1 := newSubscriber(t, group, func(c *kafkabroker.SubscriberConfig) { c.CloseTimeout = 300 * time.Millisecond })
	require.NoError(t, r1.AddHandler("billing", topic, sub1, func(ctx context.Context, tx TTxPG, msg *message.Message) error {
		if err := b.apply(ctx, tx, "evt-slow"); err != nil {
			return err
		}
		close(entered)
		<-ctx.Done() // stuck until the shutdown gives up on it
		return ctx.Err()
	}))
	rn1 := start(t, r1)
	waitClosed(t, entered, "the handler to start")
	require.NoError(t, rn1.close())
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed}, rep.outcomes("evt-slow"))
	require.ErrorIs(t, rep.snapshot()[0].Err, context.Canceled)
	require.Empty(t, b.applied(t), "rolled back")
	require.Zero(t, topicSize(t, topic+".dlq"), "a cancelled handler is not poison")

	r2 := newRouter()
	require.NoError(t, r2.AddHandler("billing", topic, newSubscriber(t, group, nil), applyHandler(b)))
	rn2 := start(t, r2)
	eventually(t, 60*time.Second, "the redelivery", func() bool { return len(rep.outcomes("evt-slow")) == 2 })
	require.NoError(t, rn2.close())
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed, ackgap.OutcomeApplied}, rep.outcomes("evt-slow"))
	require.Equal(t, map[string]int{"evt-slow": 1}, b.applied(t))
}

// TestGracefulShutdown: router.Close while a handler is in flight lets it
// finish with a live context, commit and ack, and commits its offset
// before the consumer leaves the group. A restart in the same group does
// NOT redeliver it (so the inbox never even sees a duplicate).
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	b := pgBackend(t)
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)
	require.NoError(t, pub.Publish(topic, event(t, "evt-inflight", "order-5")))
	rep := &reports{}
	r, err := router.New(b.store, &router.Config{
		DeadLetter: pub, DeadLetterTopic: topic + ".dlq", InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger(),
	})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	var ctxErr error
	require.NoError(t, r.AddHandler("billing", topic, newSubscriber(t, group, nil), func(ctx context.Context, tx TTxPG, msg *message.Message) error {
		close(entered)
		<-release
		ctxErr = ctx.Err()
		return b.apply(ctx, tx, "evt-inflight")
	}))
	rn := start(t, r)
	waitClosed(t, entered, "the handler to start")

	closed := make(chan error, 1)
	go func() { closed <- rn.close() }()
	select {
	case err := <-closed:
		t.Fatalf("router.Close returned (%v) while a handler was in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-closed)

	require.NoError(t, ctxErr, "the in-flight handler's context stayed live during Close")
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied}, rep.outcomes("evt-inflight"))
	require.Equal(t, map[string]int{"evt-inflight": 1}, b.applied(t))
	assertNothingRedelivered(t, topic, group)
}

// TestCommitInterval: with interval commits an ack only marks the offset;
// Close commits what is marked, so a clean restart re-reads nothing.
func TestCommitInterval(t *testing.T) {
	t.Parallel()
	b := sqliteBackend(t)
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)
	const n = 50
	var msgs []*message.Message
	for i := range n {
		msgs = append(msgs, event(t, "evt-"+string(rune('A'+i%26))+randomHex(3), ""))
	}
	require.NoError(t, pub.Publish(topic, msgs...))
	rep := &reports{}
	r, err := router.New(b.store, &router.Config{
		DeadLetter: pub, DeadLetterTopic: topic + ".dlq", InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger(),
	})
	require.NoError(t, err)
	sub := newSubscriber(t, group, func(c *kafkabroker.SubscriberConfig) { c.CommitInterval = time.Hour })
	require.NoError(t, r.AddHandler("billing", topic, sub, applyHandler(b)))
	rn := start(t, r)
	eventually(t, 60*time.Second, "all events applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	require.NoError(t, rn.close())
	require.Len(t, b.applied(t), n)
	assertNothingRedelivered(t, topic, group)
}
