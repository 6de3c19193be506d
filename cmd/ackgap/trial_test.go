package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreshUserTrial builds the command as a user's go install would
// (this module alone: GOWORK=off) and runs the binary with none of the
// caller's environment: migrate a new SQLite file, then status --json,
// parsed back.
func TestFreshUserTrial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command: skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ackgap")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOWORK=off")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	run := func(args ...string) (stdout []byte, code int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
		stdout, err := cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return stdout, exit.ExitCode()
		}
		require.NoError(t, err)
		return stdout, 0
	}
	dsn := "sqlite:" + filepath.Join(dir, "app.db")
	out, code := run("migrate", "up", "--dsn", dsn)
	require.Equal(t, exitOK, code, "migrate up: %s", out)

	out, code = run("status", "--json", "--dsn", dsn)
	require.Equal(t, exitOK, code, "status: %s", out)
	var st statusView
	require.NoError(t, json.Unmarshal(out, &st), "status --json: %s", out)
	require.NotNil(t, st.Migrations)
	require.Positive(t, st.Migrations.Latest)
	require.Equal(t, st.Migrations.Latest, st.Migrations.Version, "migrated to the newest version")
	require.Empty(t, st.Inbox, "a new database has no inbox rows")
	require.Empty(t, st.Outbox)
	require.Positive(t, st.WindowSeconds)

	_, code = run("status", "--dsn", "sqlite:"+filepath.Join(dir, "missing.db"))
	require.Equal(t, exitFailed, code, "a database that does not exist is an error, not an empty status")
	require.NoFileExists(t, filepath.Join(dir, "missing.db"), "status creates no database")
}
