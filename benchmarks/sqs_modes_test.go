package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/internal/testdb"
)

// TestSQSModes runs the SQS modes comparison once, briefly, on fauxqs and
// PostgreSQL: every mode's run is correct (per-key order, exactly once,
// every effect), and the section replaces the one of an earlier run in
// -out, leaving the rest of the file (the Kafka section too) alone. It
// asserts nothing about speed. It needs fauxqs (tools/brokers.sh start,
// or SQS_ENDPOINT) and fails, never skips, without it.
func TestSQSModes(t *testing.T) {
	endpoint := envOr("SQS_ENDPOINT", sqsEndpointDefault)
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	old := "# results\n\n" + kmBegin + "\nkafka kept\n" + kmEnd + "\n\n" + smBegin + "\nstale\n" + smEnd + "\n\ntail kept\n"
	require.NoError(t, os.WriteFile(out, []byte(old), 0o644))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"-dsn", testdb.URL(), "-sqs-endpoint", endpoint, "-sqs-modes", "-sqs-modes-events", "200", "-sqs-modes-runs", "1",
		"-sqs-modes-delays", "0", "-out", out,
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	written, err := os.ReadFile(out)
	require.NoError(t, err)
	doc := string(written)
	require.True(t, strings.HasPrefix(doc, "# results\n\n"+kmBegin+"\nkafka kept\n"+kmEnd+"\n\n"+smBegin), doc)
	require.True(t, strings.HasSuffix(doc, smEnd+"\n\ntail kept\n"), doc)
	require.NotContains(t, doc, "stale")
	for _, m := range smModes {
		require.Contains(t, stdout.String(), "| "+m+" | at once | ")
	}
	require.NotContains(t, stdout.String(), "| NO |")
	// The lease headroom of every deleted message, p50 / p1, on the modes
	// whose subscriber reports its lease (issue 21, item 4).
	for _, m := range []string{smRouter, smBatched, smBatchedFIFO} {
		require.Regexp(t, `\| `+regexp.QuoteMeta(m)+` \| at once \| [^\n]*\| -?\d+\.\d\d / -?\d+\.\d\d[^|]*\| yes \|`, stdout.String())
	}
}

func TestSQSModesFlags(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parse([]string{"-sqs-modes-delays", "soon", "-sqs-modes-events", "0", "-sqs-modes-only", "ackgap fast"}, &stderr)
	require.ErrorContains(t, err, `-sqs-modes-delays: "soon"`)
	require.ErrorContains(t, err, "-sqs-modes-events and -sqs-modes-runs must be positive")
	require.ErrorContains(t, err, `-sqs-modes-only: unknown mode "ackgap fast"`)
	_, err = parse([]string{"-sqs-modes", "-kafka-modes"}, &stderr)
	require.ErrorContains(t, err, "-sqs-modes, -kafka-modes and -soak are runs of their own")
}
