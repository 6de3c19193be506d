package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestToolDirectiveInUserModule runs the checker the way the README tells a
// user to: from a fresh module of their own, with a tool directive (here
// replaced to this checkout), go mod tidy and go tool ackgapvet. It needs the
// checker's dependencies in the module cache or from GOPROXY as the
// environment has it; -short skips it.
func TestToolDirectiveInUserModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the checker in a fresh module")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	require.NoError(t, err)
	checkout := strings.TrimSpace(string(out))

	dir := t.TempDir()
	gomod := "module example.com/usermod\n\ngo 1.26\n\n" +
		"require github.com/ackgap/ackgap v0.0.0\n\n" +
		"replace github.com/ackgap/ackgap => " + checkout + "\n\n" +
		"tool github.com/ackgap/ackgap/cmd/ackgapvet\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	src := `package usermod

import (
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

func Register(r *message.Router) {
	r.AddNoPublisherHandler("notify", "orders", nil, func(msg *message.Message) error {
		_, err := http.Post("https://hooks.example/notify", "text/plain", nil)
		return err
	})
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "usermod.go"), []byte(src), 0o644))
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "ACKGAPVET_FORMAT=", "ACKGAPVET_SEVERITY=", "ACKGAPVET_CHECKS=")

	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir, tidy.Env = dir, env
	b, err := tidy.CombinedOutput()
	require.NoError(t, err, "%s", b)

	run := exec.Command("go", "tool", "ackgapvet", "./...")
	run.Dir, run.Env = dir, env
	b, err = run.Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", b)
	require.Equal(t, exitFindings, exit.ExitCode(), "%s\n%s", b, exit.Stderr)
	require.Contains(t, string(b), "usermod.go:11:")
	require.Contains(t, string(b), "[effect]")
}
