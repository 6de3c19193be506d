package brokertest

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
)

// PausedClose describes a close-while-the-server-is-paused check (docs/design.md
// invariant 3; issue #12's bounded shutdown) for [ClosePausedServer].
type PausedClose struct {
	// Server is the broker server's process, private to the test: it is
	// paused with SIGSTOP and resumed with SIGCONT.
	Server *os.Process
	// Topic holds one message, published before the call, with the event
	// id EventID.
	Topic, EventID string
	// NewSubscriber returns a new subscriber (the same consumer group or
	// queue each time).
	NewSubscriber func() message.Subscriber
	// Bound is how long Close may take with the server paused: the
	// adapter's close timeouts plus a margin for a loaded machine.
	Bound time.Duration
	// CloseErr, when set, says whether an error of Close with the server
	// paused is one the adapter documents (nil: Close must return nil).
	CloseErr func(error) bool
}

// ClosePausedServer receives p's message, leaves it unacked, pauses the
// server and closes the subscriber. It asserts that Close returns within
// p.Bound, cancels the unsettled message's context (its handler rolls
// back) and closes the channel; then it resumes the server and asserts
// that a new subscriber gets the same event again: it was neither
// committed nor deleted, so nothing is lost. It returns how long Close
// took.
func ClosePausedServer(t *testing.T, p PausedClose) time.Duration {
	t.Helper()
	receive := func(msgs <-chan *message.Message) *message.Message {
		select {
		case msg, ok := <-msgs:
			require.True(t, ok, "channel closed before a message came")
			return msg
		case <-time.After(60 * time.Second):
			t.Fatal("no message within 60s")
			return nil
		}
	}
	closeOK := func(err error) {
		if err != nil && (p.CloseErr == nil || !p.CloseErr(err)) {
			require.NoError(t, err)
		}
	}

	sub := p.NewSubscriber()
	msgs, err := sub.Subscribe(context.Background(), p.Topic)
	require.NoError(t, err)
	msg := receive(msgs)
	require.Equal(t, p.EventID, msg.Metadata.Get(ackgap.MetadataEventIDKey))

	// In flight, never acked; the server stops answering.
	require.NoError(t, p.Server.Signal(syscall.SIGSTOP))
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- sub.Close() }()
	select {
	case err = <-closed:
	case <-time.After(p.Bound):
		t.Fatalf("Close still waiting after %s with the server paused", p.Bound)
	}
	elapsed := time.Since(start)
	closeOK(err)
	require.Error(t, msg.Context().Err(), "the unsettled message's context is cancelled: its handler rolls back")
	select {
	case _, ok := <-msgs:
		require.False(t, ok, "nothing more handed out; the channel is closed")
	case <-time.After(p.Bound):
		t.Fatal("the channel is still open after Close returned")
	}

	require.NoError(t, p.Server.Signal(syscall.SIGCONT))
	sub2 := p.NewSubscriber()
	t.Cleanup(func() { _ = sub2.Close() })
	msgs2, err := sub2.Subscribe(context.Background(), p.Topic)
	require.NoError(t, err)
	again := receive(msgs2)
	require.Equal(t, p.EventID, again.Metadata.Get(ackgap.MetadataEventIDKey), "received again: it was never committed or deleted")
	again.Ack()
	closeOK(sub2.Close())
	return elapsed
}
