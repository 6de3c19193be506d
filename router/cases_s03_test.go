package router_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

// ctxPublisher publishes to a GoChannel only while the message's context
// is live, as a publisher that sends with msg.Context() does (an HTTP or
// gRPC broker client); it counts what it published and what it refused.
type ctxPublisher struct {
	pub *gochannel.GoChannel

	mu                  sync.Mutex
	published, refused  int
	deadlineAtPublishOK bool // every published message's context had a deadline
}

func (p *ctxPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		if err := msg.Context().Err(); err != nil {
			p.mu.Lock()
			p.refused++
			p.mu.Unlock()
			return fmt.Errorf("dead-letter publish with the message's context: %w", err)
		}
		if err := p.pub.Publish(topic, msg); err != nil {
			return err
		}
		_, hasDeadline := msg.Context().Deadline()
		p.mu.Lock()
		if p.published == 0 {
			p.deadlineAtPublishOK = hasDeadline
		} else {
			p.deadlineAtPublishOK = p.deadlineAtPublishOK && hasDeadline
		}
		p.published++
		p.mu.Unlock()
	}
	return nil
}

func (p *ctxPublisher) Close() error { return nil }

// TestS03DeadLetterAfterDeadline is case S03, message m2 (cancellation is
// not poison, from openmeterio/openmeter PR #3141 and Watermill PR #696 for
// #636): "m2 = E2 whose handler returns a permanent business error. Let
// the handler ctx deadline expire just before the permanent error is
// returned. Expected: m2 -> DLQ publish uses its own detached timeout and
// succeeds once, then m2 is acked; poison_routed=1."
//
// The dead-letter publisher here sends with the message's context, as
// many broker clients do; Watermill's poison queue hands it the message
// whose context is the handler's, already past its deadline. The
// publisher must get a live context of its own, with a deadline.
func TestS03DeadLetterAfterDeadline(t *testing.T) {
	store, balance := pgSetup(t)
	events := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, watermill.NopLogger{})
	dead := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	dlq, err := dead.Subscribe(context.Background(), router.DeadLetterTopicDefault)
	require.NoError(t, err)
	dlPub := &ctxPublisher{pub: dead}
	obs := newObserved()
	r, err := router.New[pgx.Tx](store, &router.Config{DeadLetter: dlPub, InboxConfig: middleware.InboxConfig{Observer: obs.observe},
		HandlerTimeout: 300 * time.Millisecond, RetryInitialInterval: time.Millisecond, RetryMaxInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	var mu sync.Mutex
	attempts := 0
	h := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		mu.Lock()
		attempts++
		mu.Unlock()
		if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance + 1 WHERE id = 'A1'`); err != nil {
			return err
		}
		<-ctx.Done()                                   // the handler's deadline expires ...
		return ackgap.Permanent("order_rejected", nil) // ... just before the permanent error
	}
	require.NoError(t, r.AddHandler("c1", "events", events, h))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-r.Running()
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		require.NoError(t, <-done)
		require.NoError(t, events.Close())
		require.NoError(t, dead.Close())
	})

	// Publish returns once the router acked m2 (a nack would resend it).
	acked := make(chan error, 1)
	go func() { acked <- events.Publish("events", depositMsg("E2", 1)) }()
	select {
	case m := <-dlq:
		m.Ack()
		require.Equal(t, "E2", m.Metadata.Get(ackgap.MetadataEventIDKey))
		require.Equal(t, "order_rejected", m.Metadata.Get(ackgap.MetadataDeadLetterReason))
	case <-time.After(10 * time.Second):
		t.Fatal("m2 did not reach the dead-letter topic")
	}
	select {
	case err := <-acked:
		require.NoError(t, err, "m2 acked after its dead-letter publish")
	case <-time.After(10 * time.Second):
		t.Fatal("m2 was not acked after its dead-letter publish")
	}
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed}, obs.wait(t, 1), "tried once: a permanent error is not retried")
	dlPub.mu.Lock()
	require.Equal(t, 1, dlPub.published, "poison_routed = 1: the dead-letter publish succeeded once")
	require.Equal(t, 0, dlPub.refused, "the dead-letter publish never ran on the expired handler context")
	require.True(t, dlPub.deadlineAtPublishOK, "the dead-letter publish has a timeout of its own")
	dlPub.mu.Unlock()
	mu.Lock()
	require.Equal(t, 1, attempts)
	mu.Unlock()
	require.Equal(t, 0, balance(), "the permanent error rolled the transaction back")
}
