package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/examples/billing/billingsim"
	"github.com/ackgap/ackgap/internal/testdb"
)

// TestMain lets the soak start this test binary as its consumer and relay
// processes (billingsim.RunSoakChild).
func TestMain(m *testing.M) {
	if ran, code := billingsim.RunSoakChild(); ran {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestSoak runs the soak for a few seconds on each broker: real consumer
// and relay processes, at least one SIGKILLed and restarted (the duration
// is longer than the time between kills, and starts after the warm-up),
// and checks the invariants at the end and that the report and the -out
// file's soak section have the resource figures. It asserts nothing about
// the figures themselves, which the machine's load decides. It needs
// PostgreSQL and the local Kafka and SQS servers, and fails, never skips,
// without them.
func TestSoak(t *testing.T) {
	for _, broker := range []string{billingsim.BrokerKafka, billingsim.BrokerSQS} {
		t.Run(broker, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "RESULTS.md")
			require.NoError(t, os.WriteFile(out, []byte("# Results\n\n## Soak\n\nold\n\n## After\n\nkept\n"), 0o644))
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{
				"-dsn", testdb.URL(), "-soak", "4s", "-soak-broker", broker, "-soak-kill-every", "1s", "-soak-rate", "50", "-out", out,
			}, &stdout, &stderr)
			require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
			report := stdout.String()
			require.Contains(t, report, "All hold.")
			require.Contains(t, report, "| consumer 0 (never killed) |")
			require.Contains(t, report, "| relay 0 (never killed) |")
			m := regexp.MustCompile(`\((\d+) and (\d+) kills\)`).FindStringSubmatch(report)
			require.NotNil(t, m, report)
			consumers, _ := strconv.Atoi(m[1])
			relays, _ := strconv.Atoi(m[2])
			require.Positive(t, consumers+relays, "at least one process killed and restarted")
			written, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, "# Results\n\n"+report+"\n## After\n\nkept\n", string(written), "the soak section replaced, the rest kept")
		})
	}
}

// A benchmark run keeps the soak section of the file it rewrites.
func TestWriteKeepingSoak(t *testing.T) {
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	require.NoError(t, writeSection(out, "## Soak\n\nfigures\n"))
	require.NoError(t, writeKeepingSections(out, "# Results\n\n## Cells\n\ntable\n"))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "# Results\n\n## Cells\n\ntable\n\n## Soak\n\nfigures\n", string(b))
	require.NoError(t, writeSection(out, "## Soak\n\nnew\n"))
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "# Results\n\n## Cells\n\ntable\n\n## Soak\n\nnew\n", string(b))
}

// A benchmark run also keeps the Kafka modes section, and a soak run
// after it replaces its own section only, wherever the two are.
func TestWriteKeepingSections(t *testing.T) {
	km := kmBegin + "\n\n## Kafka ordering modes\n\nmodes\n\n" + kmEnd
	for name, old := range map[string]string{
		"soak last":  "# Old\n\nstale\n\n" + km + "\n\nhand-written\n\n## Soak\n\nfigures\n",
		"soak first": "# Old\n\n## Soak\n\nfigures\n\n" + km + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "RESULTS.md")
			require.NoError(t, os.WriteFile(out, []byte(old), 0o644))
			require.NoError(t, writeSection(out, "## Soak\n\nnew\n"))
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Contains(t, string(b), km, "the soak run keeps the Kafka modes section whole")
			require.Contains(t, string(b), "## Soak\n\nnew\n")
			require.NotContains(t, string(b), "figures")

			require.NoError(t, writeKeepingSections(out, "# Results\n\n## Cells\n\ntable\n"))
			b, err = os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, "# Results\n\n## Cells\n\ntable\n\n"+km+"\n\n## Soak\n\nnew\n", string(b))
		})
	}
}
