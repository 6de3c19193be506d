package main

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/telemetry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Sarama (kafkabroker, TestScrape/kafka) registers go-metrics
		// meters; go-metrics ticks every meter from one package-level
		// goroutine that it starts with the first meter and never stops
		// (rcrowley/go-metrics meter.go, arbiter).
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
	)
}

// serve runs the example with o on a free port and returns a scrape of
// its endpoint and a stop that ends the run and checks it ended cleanly.
func serve(t *testing.T, o options) (get func() string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	o.listen = "127.0.0.1:0"
	go func() { done <- run(ctx, o, io.Discard, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("run ended before serving: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("the endpoint did not come up in 60 s")
	}
	tr := &http.Transport{}
	get = func() string {
		t.Helper()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + addr + "/metrics")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return string(body)
	}
	stop = func() {
		tr.CloseIdleConnections()
		cancel()
		require.NoError(t, <-done)
	}
	return get, stop
}

// scrapeUntil scrapes get until ok holds of the scrape, for up to 60 s.
func scrapeUntil(t *testing.T, get func() string, what string, ok func(scrape string) bool) string {
	t.Helper()
	scrape := get()
	for deadline := time.Now().Add(60 * time.Second); !ok(scrape); {
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed:\n%s", what, scrape)
		}
		time.Sleep(50 * time.Millisecond)
		scrape = get()
	}
	return scrape
}

// sample returns the first sample line of scrape starting with prefix and
// holding every one of labels.
func sample(t *testing.T, scrape, prefix string, labels ...string) string {
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

// TestScrape: a real Prometheus scrape of the endpoint shows ackgap's
// metrics with the outcomes of what was published: 20 events, two of them
// twice, so 20 applied, 2 duplicates and 20 receipts pending; on GoChannel
// (TestScrape/gochannel) and on Kafka (TestScrape/kafka, kfake from
// tools/brokers.sh), where kafkabroker's per-partition metrics show too.
// The Grafana dashboard is then checked against both scrapes.
func TestScrape(t *testing.T) {
	var scrapes []string
	t.Run("gochannel", func(t *testing.T) {
		get, stop := serve(t, options{events: 20, topic: "orders", group: "billing"})
		defer stop()
		// The ack gap is recorded once the ack is seen, on a goroutine of the
		// telemetry's own: scrape until the histogram has all 20 acks.
		scrape := scrapeUntil(t, get, "the ack gap of 20 acks", func(s string) bool { return ackGapCount(s, 20) })
		checkOutcomes(t, scrape)
		scrapes = append(scrapes, scrape)
	})
	t.Run("kafka", func(t *testing.T) {
		brokers := strings.Split(cmp.Or(os.Getenv("KAFKA_BROKERS"), "127.0.0.1:9092"), ",")
		c, err := net.DialTimeout("tcp", brokers[0], 2*time.Second)
		require.NoError(t, err, "Kafka broker %s (KAFKA_BROKERS): start it with tools/brokers.sh install && tools/brokers.sh start", brokers[0])
		require.NoError(t, c.Close())
		suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
		get, stop := serve(t, options{events: 20, kafka: brokers, topic: "orders." + suffix, group: "billing." + suffix})
		defer stop()
		// 22 records on a new topic: once every partition's committed
		// offsets add up to 22 and no lag is left, all were handled.
		// The outbox gauge is read by its own query at scrape time, on
		// another connection than the handlers' transactions: wait for it
		// too (a lost receipt row keeps it below 20 and fails the wait).
		scrape := scrapeUntil(t, get, "22 records committed with no lag, and 20 receipts pending", func(s string) bool {
			committed, lag := sumOf(s, "ackgap_kafka_partition_committed{"), sumOf(s, "ackgap_kafka_partition_lag{")
			return committed == 22 && lag == 0 && strings.Contains(s, `ackgap_outcome="duplicate"`) && sumOf(s, "ackgap_outbox_backlog{") == 20
		})
		checkOutcomes(t, scrape)
		group := `messaging_consumer_group_name="billing.` + suffix + `"`
		for _, name := range []string{"in_flight", "buffered", "lag"} {
			require.True(t, strings.HasSuffix(sample(t, scrape, "ackgap_kafka_partition_"+name+"{", group), " 0"), name)
		}
		for _, name := range []string{"replays_skipped_total", "regressions_total"} {
			require.Equal(t, 0.0, sumOf(scrape, "ackgap_kafka_partition_"+name+"{"), name)
		}
		require.Equal(t, sumOf(scrape, "ackgap_kafka_partition_committed{"), sumOf(scrape, "ackgap_kafka_partition_watermark{"))
		scrapes = append(scrapes, scrape)
	})
	require.Len(t, scrapes, 2, "both scrapes for the dashboard")
	checkDashboard(t, strings.Join(scrapes, "\n"))
}

// checkOutcomes checks the samples of 20 events, two of them published
// twice, handled by consumer billing*.
func checkOutcomes(t *testing.T, scrape string) {
	t.Helper()
	require.True(t, strings.HasSuffix(sample(t, scrape, `ackgap_outcomes_total{`, `ackgap_outcome="applied"`, `ackgap_consumer="billing`), " 20"))
	require.True(t, strings.HasSuffix(sample(t, scrape, `ackgap_outcomes_total{`, `ackgap_outcome="duplicate"`), " 2"))
	require.True(t, strings.HasSuffix(sample(t, scrape, `ackgap_duplicates_skipped_total{`), " 2"), sample(t, scrape, `ackgap_duplicates_skipped_total{`))
	require.Contains(t, scrape, "ackgap_ack_gap_seconds_bucket{")
	require.True(t, strings.HasSuffix(sample(t, scrape, "ackgap_outbox_backlog{"), " 20"), sample(t, scrape, "ackgap_outbox_backlog{"))
	require.Contains(t, scrape, "ackgap_outbox_oldest_pending_age_seconds{")
}

// sumOf adds the values of scrape's sample lines starting with prefix.
func sumOf(scrape, prefix string) float64 {
	var sum float64
	for _, line := range strings.Split(scrape, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
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

// seriesLabels returns, per metric name in scrape, the label names its
// samples carry.
func seriesLabels(scrape string) map[string]map[string]bool {
	sampleLine := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
	labelName := regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="`)
	out := map[string]map[string]bool{}
	for _, line := range strings.Split(scrape, "\n") {
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if out[m[1]] == nil {
			out[m[1]] = map[string]bool{}
		}
		for _, l := range labelName.FindAllStringSubmatch(m[2], -1) {
			out[m[1]][l[1]] = true
		}
	}
	return out
}

// checkDashboard loads grafana-dashboard.json and checks it against real
// scrapes: every metric a panel or a variable queries is one the recipe
// exports (seen in the scrape, or one of the two that only SQS or an
// unconfirmed ack makes appear, named from the telemetry constants), every
// label a query matches, groups by or names in its legend is one those
// series carry, every panel has a unique id and queries through the
// dashboard's datasource variable.
func checkDashboard(t *testing.T, scrape string) {
	t.Helper()
	raw, err := os.ReadFile("grafana-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Title         string `json:"title"`
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			GridPos struct {
				H, W, X, Y int
			} `json:"gridPos"`
			Targets []struct {
				RefID        string `json:"refId"`
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.Title)
	require.NotEmpty(t, dash.UID)
	require.Equal(t, 39, dash.SchemaVersion)
	series := seriesLabels(scrape)
	vars := map[string]bool{"__rate_interval": true}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
	}
	promName := func(otel string) string { return strings.ReplaceAll(otel, ".", "_") }
	// Exported only when an SQS consumer acks (lease headroom) or a broker
	// leaves an ack unconfirmed: absent from these GoChannel and Kafka
	// scrapes.
	conditional := map[string]bool{
		promName(telemetry.MetricLeaseHeadroom) + "_seconds_bucket": true,
		promName(telemetry.MetricAcksUnconfirmed) + "_total":        true,
	}
	metric := regexp.MustCompile(`\backgap_[a-z_]+`)
	selectors := regexp.MustCompile(`by \([^)]*\)|\{[^}]*\}`)
	byLabels := regexp.MustCompile(`by \(([^)]*)\)`)
	matcherLabel := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	legendLabel := regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	variable := regexp.MustCompile(`\$\{?([a-z_]+)`)
	// checkQuery checks the metrics and labels of one PromQL query (a
	// panel's expr or a variable's label_values) and returns its metrics.
	checkQuery := func(where, expr string, extraLabels ...string) []string {
		t.Helper()
		// Metric names only: label names sit in by (...) and {...}.
		names := metric.FindAllString(selectors.ReplaceAllString(expr, ""), -1)
		require.NotEmpty(t, names, "%s: %s queries no ackgap metric", where, expr)
		have := map[string]bool{}
		known := false
		for _, n := range names {
			_, seen := series[n]
			require.True(t, seen || conditional[n], "%s: %s is not a metric the recipe exports", where, n)
			for l := range series[n] {
				have[l] = true
				known = true
			}
		}
		var used []string
		for _, m := range byLabels.FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(m[1], ",") {
				used = append(used, strings.TrimSpace(l))
			}
		}
		for _, sel := range selectors.FindAllString(expr, -1) {
			if strings.HasPrefix(sel, "{") {
				for _, m := range matcherLabel.FindAllStringSubmatch(sel, -1) {
					used = append(used, m[1])
				}
			}
		}
		used = append(used, extraLabels...)
		if known { // a conditional metric alone: no sample to check its labels against
			for _, l := range used {
				require.True(t, have[l], "%s: %s: no series of %v carries label %s", where, expr, names, l)
			}
		}
		for _, m := range variable.FindAllStringSubmatch(expr, -1) {
			require.True(t, vars[m[1]], "%s: undefined variable $%s", where, m[1])
		}
		return names
	}
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, ok := v.Query.(string)
		require.True(t, ok, "variable %s: query is a string", v.Name)
		m := labelValues.FindStringSubmatch(q)
		require.NotNil(t, m, "variable %s: %s is label_values(metric, label)", v.Name, q)
		checkQuery("variable "+v.Name, m[1], m[2])
	}

	ids := map[int]bool{}
	queried := map[string]bool{}
	require.GreaterOrEqual(t, len(dash.Panels), 6)
	for _, p := range dash.Panels {
		require.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		require.NotEmpty(t, p.Title, "panel %d", p.ID)
		require.True(t, p.GridPos.W > 0 && p.GridPos.H > 0 && p.GridPos.X+p.GridPos.W <= 24, "%s: gridPos", p.Title)
		if p.Type == "row" {
			require.Empty(t, p.Targets, p.Title)
			continue
		}
		require.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.RefID, p.Title)
			var legend []string
			for _, m := range legendLabel.FindAllStringSubmatch(tg.LegendFormat, -1) {
				legend = append(legend, m[1])
			}
			// An aggregation keeps only the labels it groups by: a legend
			// naming another one would print blank.
			if by := byLabels.FindAllStringSubmatch(tg.Expr, -1); by != nil {
				for _, l := range legend {
					require.True(t, slices.ContainsFunc(by, func(m []string) bool {
						return slices.Contains(strings.Split(strings.ReplaceAll(m[1], " ", ""), ","), l)
					}), "%s: legend %s names %s, which %s does not keep", p.Title, tg.LegendFormat, l, tg.Expr)
				}
			}
			for _, n := range checkQuery(p.Title, tg.Expr, legend...) {
				queried[n] = true
			}
		}
	}
	for _, want := range []string{
		"ackgap_ack_gap_seconds_bucket", "ackgap_lease_headroom_seconds_bucket", "ackgap_outcomes_total", "ackgap_outbox_backlog",
		// kafkabroker's per-partition instruments, named from its constants.
		promName(kafkabroker.MetricPartitionLag), promName(kafkabroker.MetricPartitionInFlight),
		promName(kafkabroker.MetricPartitionBuffered), promName(kafkabroker.MetricPartitionCommitted),
		promName(kafkabroker.MetricPartitionWatermark), promName(kafkabroker.MetricPartitionReplaysSkipped) + "_total",
		promName(kafkabroker.MetricPartitionRegressions) + "_total",
	} {
		require.True(t, queried[want], "the dashboard shows no %s", want)
	}
}
