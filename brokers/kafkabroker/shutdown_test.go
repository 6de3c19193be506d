package kafkabroker_test

import (
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

	"github.com/ackgap/ackgap/brokers/brokertest"
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
	elapsed := brokertest.ClosePausedServer(t, brokertest.PausedClose{
		Server: broker, Topic: topic, EventID: "E1",
		NewSubscriber: func() message.Subscriber { return newSub() },
		Bound:         closeTimeout + leaveTimeout + margin,
		CloseErr:      func(err error) bool { return errors.Is(err, kafkabroker.ErrCloseTimedOut) },
	})
	t.Logf("Close returned after %s with the broker paused", elapsed.Round(time.Millisecond))
}
