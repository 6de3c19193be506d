package kafkabroker

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
)

// pausedKfake starts a kfake process of the test's own on a free loopback
// port (the shared broker must never be paused), from .bin/kfake
// (tools/brokers.sh install) or built from tools/kfake, and returns its
// address and process. The process is resumed (SIGCONT) and killed when t
// ends. (kafkabroker_test's privateKfake, for this package's own tests.)
func pausedKfake(t *testing.T) (string, *os.Process) {
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

// waitStopped waits until process pid is stopped (state T in
// /proc/pid/stat): SIGSTOP takes effect asynchronously, and a request
// sent before would still be answered.
func waitStopped(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		require.NoError(t, err)
		// pid (comm) state ...: the state follows the last ')'.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
		require.True(t, time.Now().Before(deadline), "process %d not stopped 10s after SIGSTOP", pid)
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRevokeCommitBoundedBrokerPaused (issue 22, item 2): a revoked
// partition's last commit (offsetCommitter.release, after the partition's
// HoldTimeout) returns within CommitTimeout when the broker stops
// answering, the group coordinator lookup included: Sarama retries that
// lookup Metadata.Retry.Max times (20 here), each up to Net.ReadTimeout,
// which CommitTimeout did not cover, so a revoke could overrun the
// rebalance. The message the commit covered is settled unconfirmed, never
// confirmed; the committer's close is bounded too.
func TestRevokeCommitBoundedBrokerPaused(t *testing.T) {
	t.Parallel()
	const commitTimeout = time.Second
	addr, proc := pausedKfake(t)
	topic, group := "revoke."+hexID(), "revoke."+hexID()
	m := joinGroupOn(t, []string{addr}, topic, group)
	// Registered after joinGroupOn's cleanup, so it runs first: the
	// member leaves a broker that answers.
	t.Cleanup(func() { _ = proc.Signal(syscall.SIGCONT) })
	p := partitionWithRecord(t, m, topic)
	k := partitionKey{topic, p}

	cfg := ParallelConfig{SubscriberConfig: SubscriberConfig{Brokers: []string{addr}, ConsumerGroup: group}, CommitTimeout: commitTimeout}.WithDefaults()
	csc := cfg.commitSarama(m.sc)
	csc.Metadata.Retry.Max = 20
	client, err := sarama.NewClient([]string{addr}, csc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	logs := &levelLogs{}
	com := newOffsetCommitter(client, csc, group, m.gen, m.id, 0, logs)
	com.timeout = commitTimeout
	d0, got0 := watched()
	com.advance(k, 1, []ackedRecord{{offset: 0, ackedAt: time.Now(), d: d0}})
	require.True(t, com.flush(nil), "accepted while the broker answers (the coordinator is known)")
	require.Len(t, *got0, 1)
	require.NoError(t, (*got0)[0].Err)

	require.NoError(t, proc.Signal(syscall.SIGSTOP))
	waitStopped(t, proc.Pid)
	d1, got1 := watched()
	com.advance(k, 2, []ackedRecord{{offset: 1, ackedAt: time.Now(), d: d1}})
	start := time.Now()
	released := make(chan struct{})
	go func() {
		defer close(released)
		com.release(k)
		go com.run()
		com.close()
	}()
	select {
	case <-released:
	case <-time.After(commitTimeout + 20*time.Second):
		t.Fatalf("the revoked partition's commit still waiting %s after the broker paused (CommitTimeout %s)", commitTimeout+20*time.Second, commitTimeout)
	}
	t.Logf("release and close returned after %s with the broker paused", time.Since(start).Round(time.Millisecond))
	require.Len(t, *got1, 1)
	require.ErrorIs(t, (*got1)[0].Err, ackgap.ErrAckNotConfirmed, "unconfirmed, never confirmed")
	require.True(t, (*got1)[0].Confirmed.IsZero())
	require.NoError(t, proc.Signal(syscall.SIGCONT))
}
