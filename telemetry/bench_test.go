package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/telemetry"
)

// memTx is the transaction of memStore.
type memTx struct{}

// memStore is a store that keeps nothing: every event applies and every
// commit succeeds, so the benchmark measures the chain, not a database.
// Methods it does not override panic (the embedded nil interface).
type memStore struct{ stores.Store[memTx] }

func (memStore) BeginInboxDeferred(context.Context, *stores.BeginInboxParams) (*stores.BeginInboxResult[memTx], error) {
	return &stores.BeginInboxResult[memTx]{}, nil
}
func (memStore) InboxVerdictTx(_ context.Context, tx memTx) (*stores.BeginInboxResult[memTx], error) {
	return &stores.BeginInboxResult[memTx]{Tx: tx}, nil
}
func (memStore) ClassifyError(err error) error           { return err }
func (memStore) CommitTx(context.Context, memTx) error   { return nil }
func (memStore) RollbackTx(context.Context, memTx) error { return nil }

type nopPublisher struct{}

func (nopPublisher) Publish(string, ...*message.Message) error { return nil }
func (nopPublisher) Close() error                              { return nil }

// BenchmarkRouterChain measures one message through package router's
// whole chain (dead letter, retry, recoverer, timeout, inbox on a store
// that does nothing, an empty handler), then its ack and the adapter's
// settlement, as the Kafka adapter reports it:
//
//   - none: no telemetry in the chain;
//   - noop: telemetry with the noop tracer and meter providers;
//   - globals: telemetry on the OpenTelemetry globals with no SDK
//     installed (what an application without one gets);
//   - sdk: the SDK with a tracetest span recorder and a ManualReader, every
//     span sampled;
//   - sdk_unobserved: the same, behind an adapter that reports nothing, so
//     the middleware watches the ack on a goroutine of its own.
func BenchmarkRouterChain(b *testing.B) {
	handler := router.Adapt(func(context.Context, memTx, *message.Message) error { return nil })
	chain := func(b *testing.B, tel *telemetry.Telemetry) message.HandlerFunc {
		cfg := &router.Config{DeadLetter: nopPublisher{}}
		if tel != nil {
			mw, err := tel.Middleware("orders", telemetry.SystemKafka)
			require.NoError(b, err)
			cfg.Middlewares = []message.HandlerMiddleware{mw}
		}
		mws, err := router.Middlewares[memTx](memStore{}, "bench", cfg)
		require.NoError(b, err)
		h := handler
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}
	run := func(b *testing.B, h message.HandlerFunc, report bool, every func()) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			msg := message.NewMessage("m", []byte(`{}`))
			msg.Metadata.Set(ackgap.MetadataEventIDKey, "evt")
			msg.Metadata.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
			d := &ackgap.Delivery{ConsumerGroup: "g", Partition: 1, Offset: int64(i), HasOffset: true, Confirmation: ackgap.ConfirmationUnobserved}
			if report {
				d.Confirmation = ackgap.ConfirmationReported
			}
			msg.SetContext(ackgap.WithDelivery(context.Background(), d))
			if _, err := h(msg); err != nil {
				b.Fatal(err)
			}
			msg.Ack()
			now := time.Now()
			d.Settle(ackgap.Settlement{Acked: true, At: now, Confirmed: now})
			if i++; i%4096 == 0 && every != nil {
				every()
			}
		}
	}
	sdk := func(b *testing.B) (*telemetry.Telemetry, func()) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		tel, err := telemetry.New(&telemetry.Config{TracerProvider: tp, MeterProvider: mp, Propagator: propagation.TraceContext{}})
		require.NoError(b, err)
		b.Cleanup(func() {
			_ = tel.Close()
			_ = tp.Shutdown(context.Background())
			_ = mp.Shutdown(context.Background())
		})
		return tel, rec.Reset // the recorder keeps every span: empty it now and then
	}

	b.Run("none", func(b *testing.B) { run(b, chain(b, nil), true, nil) })
	b.Run("noop", func(b *testing.B) {
		tel, err := telemetry.New(&telemetry.Config{
			TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider(),
			Propagator: propagation.TraceContext{},
		})
		require.NoError(b, err)
		defer tel.Close()
		run(b, chain(b, tel), true, nil)
	})
	b.Run("globals", func(b *testing.B) {
		tel, err := telemetry.New(nil) // the OpenTelemetry globals, no SDK installed
		require.NoError(b, err)
		defer tel.Close()
		run(b, chain(b, tel), true, nil)
	})
	b.Run("sdk", func(b *testing.B) {
		tel, reset := sdk(b)
		run(b, chain(b, tel), true, reset)
	})
	b.Run("sdk_unobserved", func(b *testing.B) {
		tel, reset := sdk(b)
		run(b, chain(b, tel), false, reset)
	})
}
