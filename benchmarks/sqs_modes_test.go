package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	// Requests per event, every mode: the SQS requests by operation and the
	// SQL round trips; unsafe-inline sends at least its UPDATE per event.
	for _, m := range smModes {
		require.Regexp(t, `\| `+regexp.QuoteMeta(m)+` \| at once \| \d+\.\d{3} \| \d+\.\d{3} \| \d+\.\d{3} \| \d+\.\d{3} \| \d+\.\d\d \(\d+\.\d\d\) \| \d+\.\d{3} \(\d+\.\d{3}\) \|`, stdout.String())
	}
	unsafeRT := regexp.MustCompile(`\| unsafe-inline \| at once \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| (\d+\.\d\d) \(`).FindStringSubmatch(stdout.String())
	require.NotNil(t, unsafeRT)
	require.GreaterOrEqual(t, mustFloat(t, unsafeRT[1]), 1.0, "unsafe-inline: one UPDATE per event at least")
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

// TestSQSModesLoadNote: the section calls the machine shared only when the
// 1-minute load after some run was above the CPUs plus one, and says the
// load it measured either way.
func TestSQSModesLoadNote(t *testing.T) {
	quiet := smLoad{cpus: 2, before: "2.12", after: "0.63"}
	for _, v := range []string{"1.40", "2.90", "0.63"} {
		quiet.peak, quiet.sampled = max(quiet.peak, mustFloat(t, v)), true
	}
	note := quiet.note()
	require.Contains(t, note, "2 CPUs; load average (1 min) 2.12 at the start, 0.63 at the end, at most 2.90 after a run")
	require.Contains(t, note, "otherwise quiet")
	require.NotContains(t, note, "shared")

	loaded := smLoad{cpus: 2, before: "13.1", after: "22.4", peak: 22.4, sampled: true}
	require.Contains(t, loaded.note(), "at most 22.40 after a run. **Other jobs shared the machine")

	unread := smLoad{cpus: 2, before: "unknown", after: "unknown"}
	require.Contains(t, unread.note(), "not read")
	require.NotContains(t, unread.note(), "quiet")
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}
