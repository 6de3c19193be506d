package childproc_test

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap/internal/childproc"
)

func TestMain(m *testing.M) {
	childproc.RunIfRequested("counter", runCounter)
	childproc.RunIfRequested("failing", func() error { return errors.New("test: failing on purpose") })
	childproc.RunIfRequested("echo", func() error { childproc.Say("echo %s", os.Getenv("WORD")); return nil })
	goleak.VerifyTestMain(m)
}

// runCounter prints N numbered lines, then READY, and waits for SIGTERM
// (exit 0) or SIGKILL.
func runCounter() error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	n, err := strconv.Atoi(os.Getenv("N"))
	if err != nil {
		return err
	}
	for i := range n {
		childproc.Say("line %d", i)
	}
	childproc.Say("READY")
	<-stop
	childproc.Say("BYE")
	return nil
}

func TestStopAfterLines(t *testing.T) {
	t.Parallel()
	c := childproc.Start(t, "counter", "N=500")
	seen := 0
	c.WaitFor(t, time.Minute, func(line string) bool {
		seen++
		return line == "READY"
	})
	require.Equal(t, 501, seen, "every line before READY, in order, once")
	require.True(t, c.Running())
	c.Stop(t, time.Minute)
	require.False(t, c.Running())
	lines := c.Lines()
	require.Len(t, lines, 502)
	require.Equal(t, "line 0", lines[0])
	require.Equal(t, "BYE", lines[501], "lines printed while stopping are kept")
}

func TestKill(t *testing.T) {
	t.Parallel()
	c := childproc.Start(t, "counter", "N=1")
	c.WaitFor(t, time.Minute, func(line string) bool { return line == "READY" })
	c.Kill(t)
	require.False(t, c.Running())
	require.Equal(t, []string{"line 0", "READY"}, c.Lines(), "SIGKILL: no BYE")
}

// TestWaitForFailsWhenTheChildExits: a child that exits before the
// awaited line fails WaitFor at once, not after the wait.
func TestWaitForFailsWhenTheChildExits(t *testing.T) {
	t.Parallel()
	c := childproc.Start(t, "failing")
	ft := &fatalRecorder{TB: t}
	started := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.WaitFor(ft, time.Minute, func(string) bool { return false })
	}()
	<-done
	require.True(t, ft.failed, "WaitFor failed the test")
	require.Less(t, time.Since(started), 30*time.Second, "failed on the exit, not on the wait")
	require.False(t, c.Running())
}

// fatalRecorder records a Fatalf and ends the goroutine, as testing.T's
// does, without failing the real test.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(string, ...any) {
	f.failed = true
	runtime.Goexit()
}

// TestCommand runs the command line of Command as another package would
// (os/exec): the child plays its role with the extra environment, and a
// failing role fails the command.
func TestCommand(t *testing.T) {
	t.Parallel()
	argv := childproc.Command("echo", "WORD=hello")
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	require.NoError(t, err)
	require.Equal(t, "echo hello\n", string(out))

	argv = childproc.Command("failing")
	err = exec.Command(argv[0], argv[1:]...).Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode())
}
