package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestScrape: a real Prometheus scrape of the endpoint shows ackgap's
// metrics with the outcomes of what was published: 20 events, two of them
// twice, so 20 applied, 2 duplicates and 20 receipts pending.
func TestScrape(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", 20, io.Discard, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run ended before serving: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the endpoint did not come up in 60 s")
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	get := func() string {
		t.Helper()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + addr + "/metrics")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return string(body)
	}
	// The ack gap is recorded once the ack is seen, on a goroutine of the
	// telemetry's own: scrape until the histogram has all 20 acks.
	scrape := get()
	for deadline := time.Now().Add(30 * time.Second); !ackGapCount(scrape, 20); {
		if time.Now().After(deadline) {
			t.Fatalf("the ack gap of 20 acks never showed:\n%s", scrape)
		}
		time.Sleep(50 * time.Millisecond)
		scrape = get()
	}

	// sample returns the first sample line starting with prefix and
	// holding every one of labels.
	sample := func(prefix string, labels ...string) string {
		t.Helper()
	lines:
		for _, line := range strings.Split(scrape, "\n") {
			if !strings.HasPrefix(line, prefix) {
				continue
			}
			for _, l := range labels {
				if !strings.Contains(line, l) {
					continue lines
				}
			}
			return line
		}
		t.Fatalf("no sample %q with %v in the scrape:\n%s", prefix, labels, scrape)
		return ""
	}
	require.True(t, strings.HasSuffix(sample(`ackgap_outcomes_total{`, `ackgap_outcome="applied"`, `ackgap_consumer="billing"`), " 20"))
	require.True(t, strings.HasSuffix(sample(`ackgap_outcomes_total{`, `ackgap_outcome="duplicate"`), " 2"))
	require.True(t, strings.HasSuffix(sample(`ackgap_duplicates_skipped_total{`), " 2"), sample(`ackgap_duplicates_skipped_total{`))
	require.Contains(t, scrape, "ackgap_ack_gap_seconds_bucket{")
	require.True(t, strings.HasSuffix(sample("ackgap_outbox_backlog{"), " 20"), sample("ackgap_outbox_backlog{"))
	require.Contains(t, scrape, "ackgap_outbox_oldest_pending_age_seconds{")

	cancel()
	require.NoError(t, <-done)
}

// ackGapCount reports whether the scrape's ack-gap histogram counted n.
func ackGapCount(scrape string, n int) bool {
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, "ackgap_ack_gap_seconds_count{") {
			return strings.HasSuffix(line, " "+strconv.Itoa(n))
		}
	}
	return false
}
