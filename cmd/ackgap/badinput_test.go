package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadTextArguments: an event id or a filter no row can hold (not
// UTF-8, a NUL byte, empty) is a usage error (exit 2) that says what is
// wrong, never a raw SQLSTATE from the database (exit 1).
func TestBadTextArguments(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		seed(t, c, s)
		for _, args := range [][]string{
			{"event", "bad\xff"},
			{"event", "e\x00"},
			{"outbox", "list", "--key-prefix", "\xff"},
			{"outbox", "list", "--kind", "ch\xfearge"},
			{"outbox", "redrive", "--key-prefix", "\xff", "--dry-run"},
		} {
			r := c.run(args...)
			require.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
			require.Contains(t, r.stderr, "UTF-8", "%q", args)
			require.NotContains(t, r.stderr, "SQLSTATE", "%q", args)
		}
		r := c.run("event", "")
		require.Equal(t, exitUsage, r.code)
		require.Contains(t, r.stderr, "the event id is empty")
	})
}

// TestDSNBareFilePath: the billing demo prints its SQLite file as a plain
// path; given as --dsn, that is a usage error that names the fix
// (sqlite:PATH), and the file is left as it was. A DSN that is not a file
// is not echoed (it may hold a password); no DSN at all lists every scheme.
func TestDSNBareFilePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "billing.db")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	c := &cli{t: t, env: map[string]string{}}

	r := c.run("status", "--dsn", path)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--dsn sqlite:"+path)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Zero(t, fi.Size(), "the file is not opened as a database")

	r = c.run("status", "--dsn", "host=db password=hunter2")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.NotContains(t, r.stderr, "hunter2")

	r = c.run("status")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "mysql://")
}

// TestDSNPasswordRedactedNotGarbled: a DSN's password is hidden where it is
// written (the DSN, "user:password@"), and nowhere else: a one-letter
// password must not turn every "e" of the driver's message into "xxxxx".
func TestDSNPasswordRedactedNotGarbled(t *testing.T) {
	c := &cli{t: t, env: map[string]string{}}
	r := c.run("status", "--dsn", "postgres://postgres:e@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	require.NotEqual(t, 0, r.code, r.stderr)
	require.NotRegexp(t, `[A-Za-z]xxxxx|xxxxx[A-Za-z]`, r.stderr, "the message is garbled")
	require.NotContains(t, r.stderr, ":e@")
	require.Contains(t, r.stderr, "unavailable", "the driver's words are kept")

	r = c.run("status", "--dsn", "postgres://postgres:hunter2@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	require.NotEqual(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "hunter2")
}
