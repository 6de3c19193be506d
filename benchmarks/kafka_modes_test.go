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

// TestKafkaModes runs the Kafka ordering modes comparison once, briefly,
// on kfake and PostgreSQL: every mode's run is correct (per-key order,
// exactly once, every effect), and the section replaces the one of an
// earlier run in -out, leaving the rest of the file alone. It asserts
// nothing about speed.
func TestKafkaModes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	old := "# results\n\nkept\n\n" + kmBegin + "\nstale\n" + kmEnd + "\n\ntail kept\n"
	require.NoError(t, os.WriteFile(out, []byte(old), 0o644))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"-dsn", testdb.URL(), "-kafka-modes", "-kafka-modes-events", "200", "-kafka-modes-runs", "1",
		"-kafka-modes-delays", "0", "-kafka-modes-hot=false", "-out", out,
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	written, err := os.ReadFile(out)
	require.NoError(t, err)
	doc := string(written)
	require.True(t, strings.HasPrefix(doc, "# results\n\nkept\n\n"+kmBegin), doc)
	require.True(t, strings.HasSuffix(doc, kmEnd+"\n\ntail kept\n"), doc)
	require.NotContains(t, doc, "stale")
	for _, m := range kmModes {
		require.Contains(t, stdout.String(), "| "+m+" | at once | ")
	}
	require.NotContains(t, stdout.String(), "| NO |")
}

func TestKafkaModesFlags(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parse([]string{"-kafka-modes-delays", "soon", "-kafka-modes-events", "0"}, &stderr)
	require.ErrorContains(t, err, `-kafka-modes-delays: "soon"`)
	require.ErrorContains(t, err, "-kafka-modes-events and -kafka-modes-runs must be positive")
	_, err = parse([]string{"-kafka-modes", "-soak", "1m"}, &stderr)
	require.ErrorContains(t, err, "-kafka-modes and -soak are runs of their own")
}
