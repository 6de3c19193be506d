package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The routers, relays, services and pools of a run must all be closed
// when realMain returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Sarama registers go-metrics meters; go-metrics ticks every meter
		// from one package-level goroutine that it starts with the first
		// meter and never stops (rcrowley/go-metrics meter.go, arbiter).
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
	)
}

func TestRealMain(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := realMain(context.Background(), []string{"-n", "100", "-partitions", "2"}, &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	require.Contains(t, out.String(), "OK: every order moved once")
	require.Contains(t, out.String(), "every order was charged once")
	require.Contains(t, out.String(), "messages/s")
	require.Regexp(t, `charges made\s+100 `, out.String())
	// The demo keeps its inbox bounded as the README's services do; a
	// fresh run has no row old enough to prune.
	require.Regexp(t, `inbox retention\s+retention\.New\(\.\.\.\)\.Run beside the relays: rows older than 15 days pruned every 1h0m0s; rounds \d+, rows deleted 0`, out.String())
	require.Regexp(t, `relay crash\s+1 relay killed mid-effect after calling out for 8 rows`, out.String())
	require.Regexp(t, `charges attempted\s+1\d\d HTTP calls \(5 replies lost`, out.String())
	require.Regexp(t, `receipts sent\s+100 `, out.String())
	// The ack gap of the 95 applied deliveries acked (5 crashed after the
	// commit, and were nacked), from the spans; GoChannel has no lease.
	m := regexp.MustCompile(`ack gap \(gochannel\)\s+p50 (\S+) ms, p90 (\S+) ms, p99 (\S+) ms, max (\S+) ms over (\d+) applied deliveries acked and confirmed`).
		FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	var ms []float64
	for _, v := range m[1:5] {
		f, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err)
		ms = append(ms, f)
	}
	require.GreaterOrEqual(t, ms[0], 0.0)
	require.True(t, slices.IsSorted(ms), "p50 <= p90 <= p99 <= max: %v", ms)
	require.Equal(t, "95", m[5])
	require.Regexp(t, `lease headroom \(gochannel\)\s+no lease`, out.String())

	out.Reset()
	errOut.Reset()
	require.Equal(t, 2, realMain(context.Background(), []string{"-n", "0"}, &out, &errOut))
	require.Equal(t, 2, realMain(context.Background(), []string{"-relays", "0"}, &out, &errOut))
	require.Equal(t, 1, realMain(context.Background(), []string{"-partitions", "1"}, &out, &errOut),
		"concurrent duplicates need two partitions")
	require.Contains(t, errOut.String(), "needs partitions >= 2")
	require.Equal(t, 1, realMain(context.Background(), []string{"-crash-restart"}, &out, &errOut),
		"GoChannel cannot crash an instance and keep its messages")
	require.Contains(t, errOut.String(), "crash-restart needs a broker that keeps")
	require.Equal(t, 1, realMain(context.Background(), []string{"-otel", "jaeger"}, &out, &errOut))
	require.Contains(t, errOut.String(), `otel is "jaeger", must be none, stdout or otlp`)
}

// -otel stdout writes every span and the metrics as JSON before the
// summary; -plot writes the histograms.
func TestRealMainStdoutAndPlot(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	svg := filepath.Join(t.TempDir(), "gap.svg")
	code := realMain(context.Background(), []string{"-n", "20", "-partitions", "2", "-otel", "stdout", "-plot", svg}, &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	spans := strings.Count(out.String(), `"Name":"process orders.placed.`)
	require.Equal(t, 24, spans, "one span per delivery: 20 events, 2 sequential copies, 1 concurrent copy, 1 redelivery after a crash")
	for _, s := range []string{`"Key":"ackgap.ack_gap"`, `"Name":"ackgap.ack_gap"`, `"Name":"ackgap.outbox.backlog"`, "plot written to " + svg} {
		require.True(t, strings.Contains(out.String(), s), "stdout has %s", s) // not the whole JSON on failure
	}
	require.Less(t, strings.LastIndex(out.String(), `"Name":"ackgap.ack_gap"`), strings.Index(out.String(), "\nstore  "),
		"the JSON comes before the summary")
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Contains(t, string(b), "<svg")
	require.Contains(t, string(b), "ack gap (commit -&gt; broker confirmed), gochannel + sqlite, 20 events")
	require.NotContains(t, string(b), "lease headroom", "GoChannel has no lease")
}

// -otel otlp sends the spans and metrics over OTLP/HTTP to the endpoint
// in OTEL_EXPORTER_OTLP_ENDPOINT. Not parallel: it sets the variable.
func TestRealMainOTLP(t *testing.T) {
	var mu sync.Mutex
	posts := map[string]int{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		posts[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty Export*ServiceResponse
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	var out, errOut bytes.Buffer
	code := realMain(context.Background(), []string{"-n", "20", "-partitions", "2", "-otel", "otlp"}, &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	require.Regexp(t, `ack gap \(gochannel\)\s+p50 `, out.String())
	mu.Lock()
	defer mu.Unlock()
	require.Positive(t, posts["/v1/traces"], "%v", posts)
	require.Positive(t, posts["/v1/metrics"], "%v", posts)
}

// -console serves the web console during the run, and -hold keeps it up
// after the summary until the context ends; -plot still writes the plot.
func TestRealMainConsoleHold(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 2, realMain(context.Background(), []string{"-hold"}, &out, &errOut))
	require.Contains(t, errOut.String(), "-hold needs -console or -prometheus")

	svg := filepath.Join(t.TempDir(), "gap.svg")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &lockedWriter{w: &out}
	read := func() string {
		stdout.mu.Lock()
		defer stdout.mu.Unlock()
		return out.String()
	}
	code := make(chan int, 1)
	go func() {
		code <- realMain(ctx, []string{"-n", "50", "-partitions", "2", "-dup-crash", "0", "-console", "127.0.0.1:0", "-prometheus", "127.0.0.1:0", "-hold", "-plot", svg}, stdout, &lockedWriter{w: &errOut})
	}()
	require.Eventually(t, func() bool { return strings.Contains(read(), "holding:") }, 2*time.Minute, 20*time.Millisecond)
	m := regexp.MustCompile(`console on (http://127\.0\.0\.1:\d+/) \(log in with token [0-9a-f]{32} to redrive\)`).FindStringSubmatch(read())
	require.NotNil(t, m, read())
	for path, want := range map[string]string{"": "<td>billing</td>", "live": "gochannel", "outbox?state=done": "charge:"} {
		resp, err := http.Get(m[1] + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, string(body), want, path)
	}
	// The Prometheus endpoint (no crash-before-ack copies in this run, whose
	// applying delivery ends as failed): every event applied once, by this run's
	// telemetry, and the ack gap histogram.
	mm := regexp.MustCompile(`metrics on (http://127\.0\.0\.1:\d+/metrics)`).FindStringSubmatch(read())
	require.NotNil(t, mm, read())
	resp, err := http.Get(mm[1])
	require.NoError(t, err)
	scrape, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	applied := 0
	for _, m := range regexp.MustCompile(`(?m)^ackgap_outcomes_total\{[^}]*ackgap_outcome="applied"[^}]*\} (\d+)$`).FindAllStringSubmatch(string(scrape), -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		applied += n
	}
	require.Equal(t, 50, applied, "every event applied once, summed over the partitions' topics")
	require.Contains(t, string(scrape), "ackgap_ack_gap_seconds_bucket{")
	cancel()
	require.Equal(t, 0, <-code, "stderr: %s", errOut.String())
	require.Contains(t, read(), "OK: every order moved once")
	require.Equal(t, 1, strings.Count(read(), "charges made"), "the summary is printed once")
	require.Contains(t, read(), "plot written to "+svg, "-plot works with -hold")
	_, err = os.Stat(svg)
	require.NoError(t, err)
}

// lockedWriter serialises the writes to w, so that a test can read what a
// run in another goroutine writes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
