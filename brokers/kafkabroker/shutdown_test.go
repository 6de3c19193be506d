package kafkabroker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

// privateKfake starts a kfake process of this test's own on a free
// loopback port (the shared broker must not be paused) and returns its
// address and process. It uses .bin/kfake (tools/brokers.sh install), or
// builds tools/kfake into a temp dir. The process is resumed and killed
// when t ends.
func privateKfake(t *testing.T) (string, *os.Process) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := filepath.Join(root, ".bin", "kfake")
	if _, err := os.Stat(bin); err != nil {
		bin = filepath.Join(t.TempDir(), "kfake")
		build := exec.Command("go", "build", "-mod=readonly", "-o", bin, ".")
		build.Dir = filepath.Join(root, "tools", "kfake")
		build.Env = append(os.Environ(), "GOWORK=off")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "go build tools/kfake: %s", out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	cmd := exec.Command(bin, "-port", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = nil, nil
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return addr, cmd.Process
		}
		require.True(t, time.Now().Before(deadline), "kfake not accepting on %s after 30s: %v", addr, err)
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCloseBoundedWhenBrokerStops (issue 12, item 4): with a message in
// flight and the broker paused (SIGSTOP) mid-close, Close returns within
// CloseTimeout + LeaveTimeout plus a stated margin (5 s, for a loaded
// machine) instead of waiting on Sarama, cancels the unsettled message's
// context, and closes the channel. The message was neither acked nor
// committed: once the broker resumes, the next member of the group gets it
// again. Nothing is lost.
func TestCloseBoundedWhenBrokerStops(t *testing.T) {
	t.Parallel()
	addr, broker := privateKfake(t)
	brokers := []string{addr}
	topic, group := unique("orders"), unique("billing")
	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, testLogger())
	require.NoError(t, err)
	require.NoError(t, pub.Publish(topic, event(t, "E1", "o1")))
	require.NoError(t, pub.Close())

	const closeTimeout, leaveTimeout, margin = time.Second, 2 * time.Second, 5 * time.Second
	newSub := func() *kafkabroker.Subscriber {
		sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{
			Brokers: brokers, ConsumerGroup: group, HoldTimeout: 5 * time.Second, SessionTimeout: 2 * time.Second,
			CloseTimeout: closeTimeout, LeaveTimeout: leaveTimeout,
		}, testLogger())
		require.NoError(t, err)
		return sub
	}
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

	sub := newSub()
	msgs, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	msg := receive(msgs)
	require.Equal(t, "E1", msg.Metadata.Get(ackgap.MetadataEventIDKey))

	// In flight, never acked; the broker stops answering.
	require.NoError(t, broker.Signal(syscall.SIGSTOP))
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- sub.Close() }()
	select {
	case err = <-closed:
	case <-time.After(closeTimeout + leaveTimeout + margin):
		t.Fatalf("Close still waiting after CloseTimeout (%s) + LeaveTimeout (%s) + %s", closeTimeout, leaveTimeout, margin)
	}
	elapsed := time.Since(start)
	if err != nil {
		require.ErrorIs(t, err, kafkabroker.ErrCloseTimedOut, "the only error Close may return here")
	}
	require.Error(t, msg.Context().Err(), "the unsettled message's context is cancelled: its handler rolls back")
	select {
	case _, ok := <-msgs:
		require.False(t, ok, "nothing more handed out; the channel is closed")
	case <-time.After(margin):
		t.Fatal("the channel is still open after Close returned")
	}
	t.Logf("Close returned after %s with the broker paused (error: %v)", elapsed.Round(time.Millisecond), err)

	require.NoError(t, broker.Signal(syscall.SIGCONT))
	sub2 := newSub()
	t.Cleanup(func() { _ = sub2.Close() })
	msgs2, err := sub2.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	again := receive(msgs2)
	require.Equal(t, "E1", again.Metadata.Get(ackgap.MetadataEventIDKey), "redelivered: it was never committed")
	again.Ack()
	if err := sub2.Close(); err != nil && !errors.Is(err, kafkabroker.ErrCloseTimedOut) {
		require.NoError(t, err)
	}
}
