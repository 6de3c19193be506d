// Package childproc runs a test binary again as a child process, for the
// tests that need another OS process: one killed with SIGKILL in the
// middle of its work, or a second member of a consumer group.
//
// The parent starts a child with [Start], naming a role and passing its
// parameters as environment variables. The child is the same test binary
// run with -test.run=^$; its TestMain calls [RunIfRequested] first for
// every role it serves, which runs the role's main function and exits
// instead of running the tests. A child reports to its parent in lines on
// stdout ([Say]); the parent reads them with [Child.WaitFor] and
// [Child.Lines], and ends the child with [Child.Stop] (SIGTERM) or
// [Child.Kill] (SIGKILL):
//
//	func TestMain(m *testing.M) {
//		childproc.RunIfRequested("consumer", runConsumer)
//		os.Exit(m.Run())
//	}
//
//	func TestCrash(t *testing.T) {
//		c := childproc.Start(t, "consumer", "TOPIC="+topic)
//		c.WaitFor(t, time.Minute, func(line string) bool { return line == "READY" })
//		c.Kill(t)
//	}
package childproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// envRole names the role a child process plays; unset in the parent.
const envRole = "ACKGAP_CHILD_ROLE"

// RunIfRequested runs main and exits when this process is a child started
// by [Start] with role: with status 0 when main returns nil, else with
// status 2 and the error on stderr. It returns at once in any other
// process. Call it first in TestMain, once per role.
func RunIfRequested(role string, main func() error) {
	if os.Getenv(envRole) != role {
		return
	}
	if err := main(); err != nil {
		fmt.Fprintf(os.Stderr, "childproc %s: %v\n", role, err)
		os.Exit(2)
	}
	os.Exit(0)
}

var sayMu sync.Mutex

// Say prints one line to stdout for the parent, formatted as fmt.Sprintf
// does. Safe for concurrent use: lines from several goroutines never
// interleave.
func Say(format string, args ...any) {
	sayMu.Lock()
	defer sayMu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// Child is a running child process and the lines it printed. Its methods
// are safe for concurrent use.
type Child struct {
	role   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process exited and stdout was read
	err    error         // cmd.Wait's, set before exited is closed

	mu      sync.Mutex
	lines   []string
	partial []byte
	grew    chan struct{} // closed and replaced when a line is added
	cursor  int           // lines WaitFor has looked at
}

// Start runs the test binary as a child of role, with the parent's
// environment plus env ("KEY=value" each); its stderr goes to the
// parent's. The child is killed, if it still runs, when t ends.
func Start(t testing.TB, role string, env ...string) *Child {
	t.Helper()
	c := &Child{role: role, exited: make(chan struct{}), grew: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(append(os.Environ(), envRole+"="+role), env...)
	c.cmd.Stdout = (*lineWriter)(c)
	c.cmd.Stderr = os.Stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("childproc: start %s: %v", role, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
	})
	return c
}

// Command returns the command line that runs the test binary as a child
// of role, with env ("KEY=value" each) added to the environment it is
// started with, through env(1): for code of another package that runs a
// command it is given (Watermill's Features.RestartServiceCommand), where
// [Start] cannot be used. The child's output and exit status are its
// runner's; RunIfRequested works the same in it.
func Command(role string, env ...string) []string {
	cmd := append([]string{"env", envRole + "=" + role}, env...)
	return append(cmd, os.Args[0], "-test.run=^$")
}

// lineWriter is the child's stdout, split into lines.
type lineWriter Child

func (w *lineWriter) Write(p []byte) (int, error) {
	c := (*Child)(w)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = append(c.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.lines = append(c.lines, string(c.partial[:i]))
		c.partial = c.partial[i+1:]
		added = true
	}
	if added {
		close(c.grew)
		c.grew = make(chan struct{})
	}
	return len(p), nil
}

// Lines returns every line the child printed so far; after [Child.Stop]
// or [Child.Kill], all of them.
func (c *Child) Lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// Running reports whether the child process has not exited yet.
func (c *Child) Running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// WaitFor passes each line the child prints to match, in order, starting
// after the line an earlier WaitFor stopped at, until match returns true.
// It fails t when the child exits first or when wait passes, quoting the
// child's last lines.
func (c *Child) WaitFor(t testing.TB, wait time.Duration, match func(line string) bool) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		for c.cursor < len(c.lines) {
			line := c.lines[c.cursor]
			c.cursor++
			if match(line) {
				c.mu.Unlock()
				return
			}
		}
		grew := c.grew
		c.mu.Unlock()
		select {
		case <-grew:
		case <-c.exited:
			if c.pending() {
				continue // lines printed before the exit
			}
			t.Fatalf("childproc: %s exited (%v) before the awaited line; last lines:\n%s", c.role, c.err, c.tail())
		case <-deadline.C:
			t.Fatalf("childproc: %s did not print the awaited line within %s; last lines:\n%s", c.role, wait, c.tail())
		}
	}
}

func (c *Child) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursor < len(c.lines)
}

// tail returns the child's last ten lines, one per line.
func (c *Child) tail() string {
	lines := c.Lines()
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}

// Stop sends SIGTERM and waits for the child to exit, failing t unless it
// exits with status 0 within wait.
func (c *Child) Stop(t testing.TB, wait time.Duration) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("childproc: SIGTERM %s: %v", c.role, err)
	}
	select {
	case <-c.exited:
	case <-time.After(wait):
		t.Fatalf("childproc: %s still running %s after SIGTERM; last lines:\n%s", c.role, wait, c.tail())
	}
	if c.err != nil {
		t.Fatalf("childproc: %s: %v; last lines:\n%s", c.role, c.err, c.tail())
	}
}

// Kill sends SIGKILL and waits for the child to exit: it gets no chance
// to finish anything.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("childproc: SIGKILL %s: %v", c.role, err)
	}
	<-c.exited
}
