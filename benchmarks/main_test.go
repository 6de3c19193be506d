package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/internal/testdb"
)

// TestHarness runs every workload once, briefly, on every store, with
// duplicates, and checks that each run was correct (state changes and
// effects equal the unique events; the command exits non-zero otherwise)
// and that the report has its tables. It asserts nothing about speed.
func TestHarness(t *testing.T) {
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"-dsn", testdb.URL(), "-concurrency", "1,3", "-dup-rates", "0,0.5", "-dup-concurrency", "3",
		"-duration", "100ms", "-messages", "300", "-runs", "2", "-out", out, "-brokers", "", // end to end: TestEndToEnd
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	written, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, stdout.String(), string(written))
	for _, want := range []string{
		"go run ./benchmarks -dsn", "## Machine", "## Throughput", "## Ratios", "## Targets", "## Duplicates",
		"## Framework overhead", "| postgres | 3 | safe |", "| postgres | 1 | ceiling |",
		"| sqlite | 3 | hand-written |", "| watermill-deduplicator | memory |", "synchronous_commit",
	} {
		require.Contains(t, stdout.String(), want)
	}
	require.NotContains(t, stdout.String(), "**no**: ", "every run was correct")
}

func TestFlags(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parse([]string{"-stores", "mysql", "-concurrency", "0", "-dup-rates", "1", "-brokers", "rabbitmq", "-runs", "0"}, &stderr)
	require.Error(t, err)
	for _, want := range []string{`unknown store "mysql"`, `-concurrency: "0"`, `-dup-rates: "1"`, `unknown broker "rabbitmq"`, "-runs 0"} {
		require.True(t, strings.Contains(err.Error(), want), "%v lacks %q", err, want)
	}
}
