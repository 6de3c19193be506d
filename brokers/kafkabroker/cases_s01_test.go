package kafkabroker_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/telemetry"
)

// errAckDropped is the harness's fault: the subscriber is closing and the
// broker ack of a committed message is lost.
var errAckDropped = errors.New("injected: ack dropped, subscriber closing")

// TestS01AckLostDuringShutdown is case S01 (ack lost during shutdown, from
// ThreeDotsLabs/watermill #437): "m1, m2, m3 = events E1..E3 {order:
// O1..O3, op: reserve}; handler takes 200 ms. Close the router 100 ms
// after m2 enters the handler; harness lets m2's DB tx commit, then drops
// m2's broker ack (subscriber closing). Restart; broker redelivers m2.
// Expected: close waits for m2's tx to finish (no half transaction). O2
// reserved once; processed_events holds exactly one (c1,E2) row; one
// outbox row for E2. Redelivered m2 is acked without running business
// logic; duplicates_skipped=1. Trace: first attempt has a tx span OK and an
// ack span with error status / acked=false; second attempt has
// dedupe_hit=true and a link to the first."
//
// On Kafka (kfake) and PostgreSQL. The dropped ack is a middleware outside
// the telemetry that turns m2's first successful return into an error, so
// the router nacks and the offset is never committed, as when the
// subscriber closes before the ack reaches the broker.
func TestS01AckLostDuringShutdown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testdb.Schema(t, 8)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, reserved integer NOT NULL);
INSERT INTO orders VALUES ('O1', 0), ('O2', 0), ('O3', 0)`)
	require.NoError(t, err)

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tel, err := telemetry.New(&telemetry.Config{TracerProvider: tp, MeterProvider: mp, Propagator: propagation.TraceContext{}})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = tel.Close()
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})

	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)
	type reserve struct {
		Order string `json:"order"`
		Op    string `json:"op"`
	}
	handle := router.JSON(func(ctx context.Context, tx pgx.Tx, msg *message.Message, r reserve) error {
		if _, err := tx.Exec(ctx, `UPDATE orders SET reserved = reserved + 1 WHERE id = $1`, r.Order); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
		id, _ := ackgap.EventIDFromContext(ctx)
		return ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "reserved", IdempotencyKey: "reserve:" + id, Payload: msg.Payload})
	})

	rep := &reports{}
	newRouter := func(fault message.HandlerMiddleware) *router.Router[pgx.Tx] {
		mw, err := tel.Middleware(topic, telemetry.SystemKafka)
		require.NoError(t, err)
		chain := []message.HandlerMiddleware{mw}
		if fault != nil {
			chain = append([]message.HandlerMiddleware{fault}, chain...)
		}
		r, err := router.New[pgx.Tx](store, &router.Config{DeadLetter: pub, DeadLetterTopic: topic + ".dlq",
			InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Middlewares: chain, Logger: testLogger()})
		require.NoError(t, err)
		require.NoError(t, r.AddHandler("c1", topic, newSubscriber(t, group, nil), handle))
		return r
	}

	// First run: 100 ms after m2 enters the handler, the router closes;
	// m2's transaction commits, then its ack is dropped.
	var rA *router.Router[pgx.Tx]
	var dropOnce sync.Once
	closed := make(chan error, 1)
	dropAck := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			drop := false
			if msg.Metadata.Get(ackgap.MetadataEventIDKey) == "E2" {
				dropOnce.Do(func() {
					drop = true
					time.AfterFunc(100*time.Millisecond, func() { closed <- rA.Close() })
				})
			}
			out, err := h(msg)
			if drop && err == nil {
				return nil, errAckDropped
			}
			return out, err
		}
	}
	rA = newRouter(dropAck)
	runA := start(t, rA)
	for i, order := range []string{"O1", "O2", "O3"} {
		payload, err := json.Marshal(reserve{Order: order, Op: "reserve"})
		require.NoError(t, err)
		msg, err := kafkabroker.NewEvent("E"+string(rune('1'+i)), payload)
		require.NoError(t, err)
		msg.Metadata.Set(kafkabroker.MetadataPartitionKey, "orders") // one partition: m1, m2, m3 in order
		require.NoError(t, pub.Publish(topic, msg))
	}
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(90 * time.Second):
		t.Fatal("the first router did not close within 90s")
	}
	require.NoError(t, runA.close())
	// Close waited for m2's transaction: it committed whole, not half.
	require.Contains(t, rep.outcomes("E2"), ackgap.OutcomeApplied, "close returned before m2's transaction finished")
	reserved := func(order string) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT reserved FROM orders WHERE id = $1`, order).Scan(&n))
		return n
	}
	require.Equal(t, 1, reserved("O2"))

	// Restart: the broker redelivers m2 (its offset was never committed).
	runB := start(t, newRouter(nil))
	eventually(t, 60*time.Second, "m2 redelivered and m3 applied", func() bool {
		return len(rep.outcomes("E2")) >= 2 && len(rep.outcomes("E3")) > 0
	})
	require.NoError(t, runB.close())

	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate}, rep.outcomes("E2"),
		"m2 applied once; the redelivery acked without running business logic")
	for _, id := range []string{"E1", "E3"} {
		require.Contains(t, rep.outcomes(id), ackgap.OutcomeApplied)
	}
	for _, order := range []string{"O1", "O2", "O3"} {
		require.Equal(t, 1, reserved(order), "order %s reserved once", order)
	}
	var inboxRows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM ackgap_inbox WHERE consumer = 'c1' AND event_id = 'E2'`).Scan(&inboxRows))
	require.Equal(t, 1, inboxRows, "one inbox row (c1, E2)")
	rows, err := store.ListOutbox(ctx, &stores.OutboxListParams{Kind: "reserved"})
	require.NoError(t, err)
	keys := map[string]int{}
	for _, r := range rows.Rows {
		keys[r.IdempotencyKey]++
	}
	require.Equal(t, map[string]int{"reserve:E1": 1, "reserve:E2": 1, "reserve:E3": 1}, keys, "one outbox row per event")

	// Trace: the first attempt committed and was nacked (no ack), the
	// redelivery is a duplicate linked to the first delivery's span.
	var first, dup sdktrace.ReadOnlySpan
	eventually(t, 30*time.Second, "both spans of E2 ended", func() bool {
		first, dup = nil, nil
		for _, s := range spans.Ended() {
			if s.SpanKind() != trace.SpanKindConsumer || attrOf(s, telemetry.AttrEventID) != "E2" {
				continue
			}
			switch attrOf(s, telemetry.AttrOutcome) {
			case telemetry.OutcomeApplied:
				first = s
			case telemetry.OutcomeDuplicate:
				dup = s
			}
		}
		return first != nil && dup != nil
	})
	firstEvents := eventNames(first)
	require.Contains(t, firstEvents, telemetry.EventCommit, "the first attempt's transaction committed")
	require.Contains(t, firstEvents, telemetry.EventNack, "the first attempt's ack was lost")
	require.NotContains(t, firstEvents, telemetry.EventAck)
	require.NotContains(t, firstEvents, telemetry.EventBrokerConfirmed)
	require.NotContains(t, eventNames(dup), telemetry.EventCommit, "the duplicate ran no business logic")
	require.Contains(t, eventNames(dup), telemetry.EventAck)
	var linked bool
	for _, l := range dup.Links() {
		if l.SpanContext.SpanID() == first.SpanContext().SpanID() && l.SpanContext.TraceID() == first.SpanContext().TraceID() {
			require.Equal(t, []attribute.KeyValue{telemetry.AttrLinkKind.String(telemetry.LinkFirstDelivery)}, l.Attributes)
			linked = true
		}
	}
	require.True(t, linked, "the duplicate's span links to the first delivery's span; links: %v", dup.Links())

	// duplicates_skipped counts the skipped redelivery (and any other
	// duplicate the inbox reported: none is expected, but an offset commit
	// is not asserted here).
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	var skipped int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != telemetry.MetricDuplicatesSkipped {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				skipped += dp.Value
			}
		}
	}
	require.GreaterOrEqual(t, skipped, int64(1))
	require.EqualValues(t, rep.count(ackgap.OutcomeDuplicate), skipped, "duplicates_skipped matches the inbox's duplicates")
}

// attrOf returns span attribute key as a string ("" when absent).
func attrOf(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}

// eventNames returns the names of a span's events, in order.
func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, e.Name)
	}
	return out
}
