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

// TestSoakMariaDB runs the soak for a few seconds with -soak-store
// mariadb (on SQS, whose consumers start at once): the children run on
// mysqlstore in a database of their own, at least one is SIGKILLed, the
// invariants hold, and the report goes between the MariaDB soak's markers
// of -out, leaving the PostgreSQL soak's section alone; a second run
// replaces only its own section. It needs MariaDB and the local SQS server
// and fails, never skips, without them.
func TestSoakMariaDB(t *testing.T) {
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	old := "# Results\n\n## Soak\n\npostgres figures\n\n" + soakMariaBegin + "\nstale\n" + soakMariaEnd + "\n\n## After\n\nkept\n"
	require.NoError(t, os.WriteFile(out, []byte(old), 0o644))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"-soak-store", "mariadb", "-mariadb-dsn", testdb.MySQLDSN(),
		"-soak", "4s", "-soak-broker", billingsim.BrokerSQS, "-soak-kill-every", "1s", "-soak-rate", "50", "-out", out,
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	report := stdout.String()
	require.Contains(t, report, "Soak on sqs and MariaDB (")
	require.Contains(t, report, "| MariaDB connections of all soak processes (PROCESSLIST) |")
	require.Contains(t, report, "All hold.")
	require.Contains(t, report, "load average")
	m := regexp.MustCompile(`\((\d+) and (\d+) kills\)`).FindStringSubmatch(report)
	require.NotNil(t, m, report)
	consumers, _ := strconv.Atoi(m[1])
	relays, _ := strconv.Atoi(m[2])
	require.Positive(t, consumers+relays, "at least one process killed and restarted")
	written, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "# Results\n\n## Soak\n\npostgres figures\n\n"+report+"\n## After\n\nkept\n", string(written),
		"the MariaDB section replaced, the PostgreSQL soak's and the rest kept")
}

// -soak-store takes postgres or mariadb only.
func TestSoakStoreFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"-soak", "1s", "-soak-store", "oracle"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `-soak-store: unknown store "oracle" (want postgres, mariadb)`)
}

// A PostgreSQL soak run replaces its own section only: not the MariaDB
// soak's nor a section whose marker follows it directly.
func TestWriteSoakKeepsMarkedSections(t *testing.T) {
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	maria := soakMariaBegin + "\n\n## Soak on MariaDB (issue #23)\n\nmaria\n\n" + soakMariaEnd
	sqs := smBegin + "\n\n## SQS modes\n\nsqs\n\n" + smEnd
	require.NoError(t, os.WriteFile(out, []byte("# Old\n\n## Soak\n\nfigures\n\n"+sqs+"\n\n"+maria+"\n"), 0o644))
	require.NoError(t, writeSection(out, "## Soak\n\nnew\n"))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "# Old\n\n## Soak\n\nnew\n\n"+sqs+"\n\n"+maria+"\n", string(b))
	require.NoError(t, writeKeepingSections(out, "# Results\n\ntable\n"))
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	require.Contains(t, string(b), maria, "a benchmark run keeps the MariaDB soak's section")
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
