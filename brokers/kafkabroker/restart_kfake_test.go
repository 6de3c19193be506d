package kafkabroker_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/internal/childproc"
)

// What "restart the broker" means in the reconnect tests
// (TestReconnectAcrossBrokerRestart, and Watermill's TestReconnect when
// runWatermillSuite runs it).
//
// Watermill's suite restarts the broker with a command it runs
// (Features.RestartServiceCommand, e.g. "docker restart kafka"). The
// shared kfake of tools/brokers.sh keeps everything in memory: restarting
// that process would lose every topic, record and committed offset, so the
// test would fail for the broker's sake, not the client's (and every other
// test using it would lose its data). So these tests run on a kfake
// process of their own started with -data-dir: kfake writes its topics,
// records, groups, producer ids and committed offsets to that directory as
// it goes and reloads them at start, as a Kafka broker does from its log
// directories.
//
// A restart is a real one of that process: SIGTERM (what docker restart
// and systemd send first; SIGKILL after 10 s), the process exits and every
// client connection is closed with it; for restartDowntime nothing
// listens on the port, so every dial is refused; then a new process starts
// on the same port and directory. The clients see what they see when a
// single-broker cluster restarts: connections closed, dials refused, the
// same broker back with the same data. What is then tested is the
// clients' part: the subscriber and the publisher resume on their own and
// every message whose publish returned nil is received. Not tested: a
// broker that loses acknowledged data (a crash before fsync), a leader
// moving to another broker of a cluster.
//
// The restart command is this test binary in the role restartRole
// (internal/childproc): it asks the test process, which owns the kfake
// process, to restart it over a loopback connection and exits once the new
// process accepts connections (status 0) or the restart failed (status 2,
// which Watermill reports as a test error).

const (
	// restartRole is the childproc role of the restart command.
	restartRole = "kafkabroker-restart-kfake"
	// envRestartControl is the control address the restart command dials.
	envRestartControl = "KAFKABROKER_RESTART_CONTROL"
	// restartDowntime is how long nothing listens between the old process
	// exiting and the new one starting: longer than Sarama's metadata
	// retries (3 × 250 ms), so that clients run out of retries and must
	// recover on their own, yet short enough to keep the test bounded.
	restartDowntime = 2 * time.Second
	// restartBound bounds one restart: stop (SIGTERM, then SIGKILL after
	// 10 s), the downtime, and the new process accepting connections.
	restartBound = 60 * time.Second
)

// runRestartCommand is the main of restartRole: it asks the test process
// at envRestartControl to restart its broker and waits for the answer.
func runRestartCommand() error {
	addr := os.Getenv(envRestartControl)
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("dial control %s: %w", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(restartBound + 10*time.Second)); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(conn, "restart"); err != nil {
		return err
	}
	answer, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no answer from control %s: %w", addr, err)
	}
	answer = strings.TrimSpace(answer)
	if answer != "ok" {
		return errors.New(answer)
	}
	fmt.Println("kfake restarted")
	return nil
}

// kfakeBin returns a kfake binary that knows -data-dir: .bin/kfake
// (tools/brokers.sh install) when it does, else tools/kfake built into a
// temp dir.
func kfakeBin(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := filepath.Join(root, ".bin", "kfake")
	if out, _ := exec.Command(bin, "-h").CombinedOutput(); strings.Contains(string(out), "-data-dir") {
		return bin
	}
	bin = filepath.Join(t.TempDir(), "kfake")
	build := exec.Command("go", "build", "-mod=readonly", "-o", bin, ".")
	build.Dir = filepath.Join(root, "tools", "kfake")
	build.Env = append(os.Environ(), "GOWORK=off")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build tools/kfake: %s", out)
	return bin
}

// restartableKfake is a kfake process of the test's own that keeps its
// state in a directory, and a control listener through which the restart
// command (Command) restarts it. Everything is stopped when t ends.
type restartableKfake struct {
	t    testing.TB
	bin  string
	dir  string
	log  string
	port int
	// Addr is the broker's address; it stays the same across restarts.
	Addr string
	ctl  net.Listener
	wg   sync.WaitGroup

	mu       sync.Mutex // held through a restart
	cmd      *exec.Cmd
	exited   chan struct{} // closed once cmd exited
	restarts int
	stopped  []chan struct{} // stopped[n] is closed once restart n+1 stopped the old process
}

// newRestartableKfake starts the broker and its control listener.
func newRestartableKfake(t testing.TB) *restartableKfake {
	t.Helper()
	dir := t.TempDir()
	k := &restartableKfake{t: t, bin: kfakeBin(t), dir: filepath.Join(dir, "data"), log: filepath.Join(dir, "kfake.log")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	k.port = ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	k.Addr = fmt.Sprintf("127.0.0.1:%d", k.port)
	require.NoError(t, k.start())
	k.ctl, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	k.wg.Add(1)
	go k.serve()
	t.Cleanup(func() {
		_ = k.ctl.Close()
		k.wg.Wait() // bounded: a restart in progress ends within restartBound
		k.mu.Lock()
		defer k.mu.Unlock()
		k.kill()
		if t.Failed() {
			if b, err := os.ReadFile(k.log); err == nil {
				t.Logf("kfake log (%d restarts):\n%s", k.restarts, b)
			}
		}
	})
	return k
}

// Command is the restart command for Watermill's Features.
func (k *restartableKfake) Command() []string {
	return childproc.Command(restartRole, envRestartControl+"="+k.ctl.Addr().String())
}

// Stopped returns a channel closed once the n-th restart (from 1) has
// stopped the old process: from then on the broker is down until the
// restart completes.
func (k *restartableKfake) Stopped(n int) <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	for len(k.stopped) < n {
		k.stopped = append(k.stopped, make(chan struct{}))
	}
	return k.stopped[n-1]
}

// Restarts returns how many restarts completed.
func (k *restartableKfake) Restarts() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.restarts
}

// serve answers restart requests, one connection at a time.
func (k *restartableKfake) serve() {
	defer k.wg.Done()
	for {
		conn, err := k.ctl.Accept()
		if err != nil {
			return
		}
		_ = conn.SetDeadline(time.Now().Add(restartBound + 10*time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		answer := "ok"
		switch {
		case err != nil:
			answer = "error: reading request: " + err.Error()
		case strings.TrimSpace(line) != "restart":
			answer = fmt.Sprintf("error: unknown request %q", line)
		default:
			if err := k.restart(); err != nil {
				answer = "error: " + err.Error()
			}
		}
		_, _ = fmt.Fprintln(conn, answer)
		_ = conn.Close()
	}
}

// restart stops the broker process, leaves the port closed for
// restartDowntime and starts a new process on the same port and data.
func (k *restartableKfake) restart() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	begin := time.Now()
	if err := k.stop(); err != nil {
		return err
	}
	for len(k.stopped) <= k.restarts {
		k.stopped = append(k.stopped, make(chan struct{}))
	}
	close(k.stopped[k.restarts])
	time.Sleep(restartDowntime)
	// The port may be briefly taken (a client's local port): retry.
	var err error
	for deadline := time.Now().Add(restartBound / 2); ; {
		if err = k.start(); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("kfake not back after %s: %w", time.Since(begin).Round(time.Millisecond), err)
	}
	k.restarts++
	k.t.Logf("kfake restart %d took %s (%s down)", k.restarts, time.Since(begin).Round(time.Millisecond), restartDowntime)
	return nil
}

// start starts a kfake process on k.port with k.dir and waits until it
// accepts connections. Callers hold k.mu (or own k).
func (k *restartableKfake) start() error {
	logf, err := os.OpenFile(k.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(k.bin, "-port", fmt.Sprint(k.port), "-data-dir", k.dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	k.cmd, k.exited = cmd, exited
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", k.Addr, time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("kfake exited at start (%v; log %s)", cmd.ProcessState, k.log)
		default:
		}
		if time.Now().After(deadline) {
			k.kill()
			return fmt.Errorf("kfake not accepting on %s after 30s: %w", k.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM (kfake closes its connections and writes its state)
// and waits for the exit, with SIGKILL after 10 s.
func (k *restartableKfake) stop() error {
	if err := k.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-k.exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	k.kill()
	return errors.New("kfake ignored SIGTERM for 10s; killed (its state may be incomplete)")
}

// kill ends the process at once and waits for it.
func (k *restartableKfake) kill() {
	_ = k.cmd.Process.Kill()
	<-k.exited
}
