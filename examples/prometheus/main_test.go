package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap/telemetry"
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
	checkDashboard(t, scrape)

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

// checkDashboard loads grafana-dashboard.json and checks it against a real
// scrape: every metric a panel queries is one the recipe exports (seen in
// the scrape, or one of the two that only SQS or an unconfirmed ack makes
// appear, named from the telemetry constants), every panel has a unique id
// and queries through the dashboard's datasource variable.
func checkDashboard(t *testing.T, scrape string) {
	t.Helper()
	raw, err := os.ReadFile("grafana-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Title      string `json:"title"`
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.Title)
	require.NotEmpty(t, dash.UID)
	vars := map[string]bool{"__rate_interval": true}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
	}
	promName := func(otel string) string { return strings.ReplaceAll(otel, ".", "_") }
	// Exported only when an SQS consumer acks (lease headroom) or a broker
	// leaves an ack unconfirmed: absent from this GoChannel scrape.
	conditional := map[string]bool{
		promName(telemetry.MetricLeaseHeadroom) + "_seconds_bucket": true,
		promName(telemetry.MetricAcksUnconfirmed) + "_total":        true,
	}
	metric := regexp.MustCompile(`\backgap_[a-z_]+`)
	labels := regexp.MustCompile(`by \([^)]*\)|\{[^}]*\}`)
	variable := regexp.MustCompile(`\$\{?([a-z_]+)`)
	ids := map[int]bool{}
	queried := map[string]bool{}
	require.GreaterOrEqual(t, len(dash.Panels), 6)
	for _, p := range dash.Panels {
		require.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		require.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.RefID, p.Title)
			// Metric names only: label names sit in by (...) and {...}.
			bare := labels.ReplaceAllString(tg.Expr, "")
			names := metric.FindAllString(bare, -1)
			require.NotEmpty(t, names, "%s: %s queries no ackgap metric", p.Title, tg.Expr)
			for _, n := range names {
				queried[n] = true
				require.True(t, strings.Contains(scrape, "\n"+n+"{") || strings.Contains(scrape, "\n"+n+" ") || conditional[n],
					"%s: %s is not a metric the recipe exports", p.Title, n)
			}
			for _, m := range variable.FindAllStringSubmatch(tg.Expr, -1) {
				require.True(t, vars[m[1]], "%s: undefined variable $%s", p.Title, m[1])
			}
		}
	}
	for _, want := range []string{"ackgap_ack_gap_seconds_bucket", "ackgap_lease_headroom_seconds_bucket", "ackgap_outcomes_total", "ackgap_outbox_backlog"} {
		require.True(t, queried[want], "the dashboard shows no %s", want)
	}
}
