package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/ackgap/ackgap/console"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/telemetry"
)

// BenchmarkOverviewPostgres renders the overview over 1,000,000 inbox
// rows (4 consumers, received over the last two hours) and 100,000 outbox
// rows (3 kinds; 90% done, the rest pending, claimed and dead), with the
// stats cache off so that every render asks PostgreSQL. It seeds for a
// minute or so; run it alone:
//
//	go test -run '^$' -bench OverviewPostgres -benchtime 20x ./console
func BenchmarkOverviewPostgres(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds 1,100,000 rows")
	}
	ctx := context.Background()
	pool, schema := testdb.Schema(b, 0)
	store, err := pgxstore.New(pool, &pgxstore.Config{Schema: schema})
	require.NoError(b, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO ackgap_inbox (consumer, event_id, payload_hash, received_at)
SELECT 'consumer-' || (i % 4), 'event-' || i, sha256(i::text::bytea), now() - (i % 7200) * interval '1 second'
FROM generate_series(1, 1000000) AS i`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO ackgap_outbox (kind, idempotency_key, payload, payload_hash, consumer, event_id,
  state, attempts, last_error, created_at, available_at, done_at)
SELECT (ARRAY['charge', 'email.receipt', 'ledger'])[1 + i % 3], 'key-' || i, '{}'::bytea, sha256(i::text::bytea),
  'consumer-' || (i % 4), 'event-' || i,
  CASE WHEN i % 100 < 90 THEN 'done' WHEN i % 100 < 97 THEN 'pending' WHEN i % 100 < 98 THEN 'claimed' ELSE 'dead' END,
  1, CASE WHEN i % 100 >= 98 THEN 'gateway: 503' ELSE '' END,
  now() - (i % 7200) * interval '1 second', now() - (i % 600) * interval '1 second',
  CASE WHEN i % 100 < 90 THEN now() ELSE NULL END
FROM generate_series(1, 100000) AS i`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `VACUUM ANALYZE ackgap_inbox, ackgap_outbox`)
	require.NoError(b, err)

	h, err := console.New(store, &console.Config{StatsTTL: time.Nanosecond, QueryTimeout: time.Minute})
	require.NoError(b, err)
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "consumer-3") {
			b.Fatalf("overview: %d %s", w.Code, w.Body.String())
		}
	}
}

// BenchmarkRecorderRecord measures what a Recorder adds to each
// measurement telemetry records (an ack gap with its attributes): the
// SDK's aggregation into the instrument's buckets, with nobody looking.
// "none" is a MeterProvider without a reader, "recorder" one with the
// Recorder's reader only.
func BenchmarkRecorderRecord(b *testing.B) {
	attrs := metric.WithAttributes(semconv.MessagingSystemKey.String(telemetry.SystemAWSSQS),
		semconv.MessagingDestinationName("orders"), telemetry.AttrConsumer.String("billing"))
	for _, tc := range []struct {
		name string
		opts []sdkmetric.Option
	}{
		{"none", nil},
		{"recorder", []sdkmetric.Option{sdkmetric.WithReader(console.NewRecorder().Reader())}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			mp := sdkmetric.NewMeterProvider(tc.opts...)
			defer func() { _ = mp.Shutdown(context.Background()) }()
			h, err := mp.Meter(telemetry.ScopeName).Float64Histogram(telemetry.MetricAckGap)
			require.NoError(b, err)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				h.Record(ctx, 0.012, attrs)
			}
		})
	}
}
