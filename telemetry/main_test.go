package telemetry_test

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
	"github.com/ackgap/ackgap/telemetry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Sarama (the Kafka tests) registers go-metrics meters, ticked by a
		// package-level goroutine that never stops (rcrowley/go-metrics
		// meter.go, arbiter).
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
	)
}

// bundle is a Telemetry on the SDK with its recorders.
type bundle struct {
	tel    *telemetry.Telemetry
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
}

// setup returns a Telemetry recording every span (tracetest) and every
// metric (ManualReader), closed when t ends.
func setup(t testing.TB) *bundle {
	t.Helper()
	b := &bundle{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	b.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(b.reader))
	tel, err := telemetry.New(&telemetry.Config{TracerProvider: b.tp, MeterProvider: mp, Propagator: propagation.TraceContext{}})
	require.NoError(t, err)
	b.tel = tel
	t.Cleanup(func() {
		require.NoError(t, tel.Close())
		require.NoError(t, b.tp.Shutdown(context.Background()))
		require.NoError(t, mp.Shutdown(context.Background()))
	})
	return b
}

// producerSpan starts and ends a span of the "producer", returning a
// context carrying it for Inject.
func (b *bundle) producerSpan() (context.Context, trace.SpanContext) {
	ctx, span := b.tp.Tracer("producer").Start(context.Background(), "send orders", trace.WithSpanKind(trace.SpanKindProducer))
	span.End()
	return ctx, span.SpanContext()
}

// ended waits until n consumer spans ended and returns them in the order
// they started (a span ends after its ack, on another goroutine, so end
// order may differ from delivery order).
func (b *bundle) ended(t testing.TB, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	var spans []sdktrace.ReadOnlySpan
	eventually(t, 60*time.Second, "consumer spans ended", func() bool {
		spans = spans[:0]
		for _, s := range b.spans.Ended() {
			if s.SpanKind() == trace.SpanKindConsumer {
				spans = append(spans, s)
			}
		}
		return len(spans) >= n
	})
	require.Len(t, spans, n, "more consumer spans than expected")
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].StartTime().Before(spans[j].StartTime()) })
	return spans
}

// metrics collects the metrics recorded so far, by name.
func (b *bundle) metrics(t testing.TB) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, b.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, telemetry.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// histogram returns the histogram data points of name.
func histogram(t testing.TB, ms map[string]metricdata.Metrics, name string) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := ms[name]
	require.True(t, ok, "metric %s not recorded", name)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "metric %s is %T", name, m.Data)
	return h.DataPoints
}

// counter returns the sum of name's data points matching attribute
// key=value (every data point when key is "").
func counter(t testing.TB, ms map[string]metricdata.Metrics, name string, key attribute.Key, value string) int64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "metric %s is %T", name, m.Data)
	var n int64
	for _, dp := range s.DataPoints {
		if key != "" {
			if v, ok := dp.Attributes.Value(key); !ok || v.AsString() != value {
				continue
			}
		}
		n += dp.Value
	}
	return n
}

// noHighCardinality fails if a metric carries a per-message attribute.
func noHighCardinality(t testing.TB, ms map[string]metricdata.Metrics) {
	t.Helper()
	banned := []attribute.Key{telemetry.AttrEventID, "messaging.message.id", "messaging.kafka.offset", "messaging.destination.partition.id"}
	check := func(name string, set attribute.Set) {
		for _, k := range banned {
			_, ok := set.Value(k)
			require.False(t, ok, "metric %s has attribute %s", name, k)
		}
	}
	for name, m := range ms {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			for _, dp := range d.DataPoints {
				check(name, dp.Attributes)
			}
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				check(name, dp.Attributes)
			}
		}
	}
}

// attrs returns a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// events returns a span's event names in order, and their times by name
// (the last one of each name).
func events(s sdktrace.ReadOnlySpan) ([]string, map[string]time.Time) {
	var names []string
	at := map[string]time.Time{}
	for _, e := range s.Events() {
		names = append(names, e.Name)
		at[e.Name] = e.Time
	}
	return names, at
}

// requireTimeline checks that the named events are present, in that
// order in the span, and that their times do not go backwards.
func requireTimeline(t testing.TB, s sdktrace.ReadOnlySpan, want ...string) {
	t.Helper()
	names, at := events(s)
	var seen []string
	for _, n := range names {
		for _, w := range want {
			if n == w {
				seen = append(seen, n)
			}
		}
	}
	require.Equal(t, want, seen, "events of %s: %v", s.Name(), names)
	for i := 1; i < len(want); i++ {
		require.False(t, at[want[i]].Before(at[want[i-1]]), "%s (%s) before %s (%s)",
			want[i], at[want[i]].Format(time.RFC3339Nano), want[i-1], at[want[i-1]].Format(time.RFC3339Nano))
	}
	require.False(t, at[want[0]].Before(s.StartTime()), "first event before the span's start")
	require.False(t, s.EndTime().Before(at[want[len(want)-1]]), "span ended before its last event")
}

func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sqliteStore returns a migrated SQLite store with a table "applied"
// (event_id, n).
func sqliteStore(t testing.TB) *sqlitestore.Store {
	t.Helper()
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, `CREATE TABLE applied (event_id TEXT PRIMARY KEY, n INTEGER NOT NULL)`)
	require.NoError(t, err)
	return store
}

// apply counts one application of the message's event in tx.
func apply(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO applied (event_id, n) VALUES (?, 1)
ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, msg.Metadata.Get("event_id"))
	return err
}

// runRouter runs a router on store with the telemetry of b for system,
// subscribed to topic on sub, until t ends.
func runRouter(t testing.TB, b *bundle, store stores.Store[*sql.Tx], system, topic string, sub message.Subscriber,
	dead message.Publisher, h router.HandlerFunc[*sql.Tx], tune func(*router.Config)) {
	t.Helper()
	mw, err := b.tel.Middleware("", system)
	require.NoError(t, err)
	cfg := &router.Config{
		DeadLetter: dead, DeadLetterTopic: topic + ".dlq",
		Middlewares: []message.HandlerMiddleware{mw},
		MaxAttempts: 1,
	}
	if tune != nil {
		tune(cfg)
	}
	r, err := router.New(store, cfg)
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("billing", topic, sub, h))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	select {
	case <-r.Running():
	case err := <-done:
		t.Fatalf("router stopped: %v", err)
	}
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		require.NoError(t, <-done)
	})
}

// percentiles returns the 50th and 100th percentile of xs.
func percentiles(xs []time.Duration) (p50, max time.Duration) {
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0, 0
	}
	return s[len(s)/2], s[len(s)-1]
}

var errFlaky = errors.New("flaky")

// once returns a flag that is true the first time it is read for key.
type once struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (o *once) first(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	if o.seen[key] {
		return false
	}
	o.seen[key] = true
	return true
}
