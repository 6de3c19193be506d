package main

import (
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
