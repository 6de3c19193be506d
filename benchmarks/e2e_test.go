package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/internal/testdb"
)

// TestEndToEnd runs the end-to-end workload once, briefly, on both stores
// and every broker, with and without telemetry, and checks that every run
// was correct (state changes, outbox rows and effects equal the unique
// events; with telemetry, a span and an outcome per delivery). It needs
// the local Kafka and SQS servers (tools/brokers.sh start, or
// KAFKA_BROKERS and SQS_ENDPOINT) and fails, never skips, without them. It
// asserts nothing about speed.
func TestEndToEnd(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"-dsn", testdb.URL(), "-stores", "postgres,sqlite", "-workloads", "", "-dup-rates", "", "-overhead=false",
		"-runs", "1", "-out", "", "-brokers", "gochannel,kafka,sqs", "-e2e-stores", "postgres,sqlite",
		"-e2e-events", "30", "-e2e-runs", "1",
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	out := stdout.String()
	for _, want := range []string{"## End to end", "end to end: telemetry sdk", "| sdk / none (throughput) |"} {
		require.Contains(t, out, want)
	}
	for _, store := range []string{"postgres", "sqlite"} {
		for _, broker := range allBrokers {
			for _, tel := range []string{"none", "sdk"} {
				require.Regexp(t, `\| `+store+` \| `+broker+` \| `+tel+` \| [0-9]+ \[.*\| yes \|`, out, "%s/%s/%s measured and correct", store, broker, tel)
			}
		}
	}
	require.NotContains(t, out, "**no**")
}

// TestEndToEndUnreachable points the Kafka and SQS clients at a port
// where nothing listens: the report says so, and the command does not
// fail for it.
func TestEndToEndUnreachable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"-dsn", testdb.URL(), "-stores", "sqlite", "-workloads", "", "-dup-rates", "", "-overhead=false",
		"-runs", "1", "-out", "", "-brokers", "kafka,sqs", "-e2e-stores", "sqlite",
		"-kafka-brokers", "127.0.0.1:1", "-sqs-endpoint", "http://127.0.0.1:1",
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	require.Regexp(t, `\| sqlite \| kafka \| none \| not measured: kafka 127.0.0.1:1: unreachable: .*\| – \|`, stdout.String())
	require.Regexp(t, `\| sqlite \| sqs \| sdk \| not measured: sqs http://127.0.0.1:1: unreachable: .*\| – \|`, stdout.String())
}

func TestPercentile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond
	}
	require.Equal(t, 50*time.Millisecond, percentile(ds, 0.5))
	require.Equal(t, 99*time.Millisecond, percentile(ds, 0.99))
	require.Equal(t, 100*time.Millisecond, percentile(ds, 1))
	require.Zero(t, percentile(nil, 0.5))
}
