package billingsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/telemetry"
)

// Values of -otel (Options.Otel): where the run's spans and metrics go
// besides the summary, which always gets the ack gap and lease headroom.
const (
	// OtelNone exports nothing (the default).
	OtelNone = "none"
	// OtelStdout writes every span and the metrics as JSON to the
	// demo's stdout (stdouttrace, stdoutmetric), before the summary.
	OtelStdout = "stdout"
	// OtelOTLP sends them over OTLP/HTTP (otlptracehttp, otlpmetrichttp)
	// to http://localhost:4318 unless the standard OTEL_EXPORTER_OTLP_*
	// variables say otherwise.
	OtelOTLP = "otlp"
)

// Settings of the demo's OpenTelemetry SDK.
const (
	// ServiceName is the resource's service.name, unless OTEL_SERVICE_NAME
	// or OTEL_RESOURCE_ATTRIBUTES set another.
	ServiceName = "billing"
	// SpanWait bounds how long a run waits, once its routers closed, for
	// the consumer spans still open: they end when the broker confirms
	// the last acks (or the subscriber gives a message up).
	SpanWait = 5 * time.Second
	// OtelShutdownTimeout bounds the flush of the exporters at the end of
	// a run (an OTLP endpoint that does not answer).
	OtelShutdownTimeout = 10 * time.Second
)

// observability is one run's OpenTelemetry SDK and ackgap's telemetry on
// it: a TracerProvider whose spans feed spanTimings (and the exporter of
// -otel), a MeterProvider read once at the end by a ManualReader (and
// exported by -otel), and the telemetry.Telemetry every router instance
// uses.
type observability struct {
	tel     *telemetry.Telemetry
	tp      *sdktrace.TracerProvider
	mp      *sdkmetric.MeterProvider
	reader  *sdkmetric.ManualReader
	timings *spanTimings

	closeOnce sync.Once
	closeErr  error
}

// newObservability builds the SDK for mode (OtelNone, OtelStdout,
// OtelOTLP; out receives OtelStdout's JSON) and a telemetry.Telemetry on
// it that also reports the outbox's backlog gauges from ob. Close it once
// the routers stopped.
// rec, when not nil, is the web console's recorder (-console): a second
// reader of the same measurements.
func newObservability(ctx context.Context, mode string, out io.Writer, ob stores.OutboxStore, readers ...sdkmetric.Reader) (*observability, error) {
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(ServiceName)), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	o := &observability{reader: sdkmetric.NewManualReader(), timings: &spanTimings{}}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		// Every delivery's span, whatever OTEL_TRACES_SAMPLER says: the
		// summary's counts are exact.
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(o.timings),
	}
	mpOpts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(o.reader)}
	for _, r := range readers {
		mpOpts = append(mpOpts, sdkmetric.WithReader(r))
	}
	spans, metrics, err := exporters(ctx, mode, out)
	if err != nil {
		return nil, err
	}
	if spans != nil {
		tpOpts = append(tpOpts, sdktrace.WithBatcher(spans))
		mpOpts = append(mpOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))
	}
	o.tp = sdktrace.NewTracerProvider(tpOpts...)
	o.mp = sdkmetric.NewMeterProvider(mpOpts...)
	o.tel, err = telemetry.New(&telemetry.Config{
		TracerProvider: o.tp, MeterProvider: o.mp, Propagator: propagation.TraceContext{},
		OutboxStats: func(ctx context.Context) (telemetry.OutboxStats, error) {
			st, err := ob.OutboxStats(ctx, &stores.OutboxStatsParams{})
			if err != nil {
				return telemetry.OutboxStats{}, err
			}
			return telemetry.OutboxStats{Pending: st.Backlog(), OldestPendingAge: st.OldestPendingAge(time.Now())}, nil
		},
	})
	if err != nil {
		return nil, errors.Join(err, o.shutdownProviders())
	}
	return o, nil
}

// exporters returns the span and metric exporters of mode, nil for
// OtelNone.
func exporters(ctx context.Context, mode string, out io.Writer) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	switch mode {
	case OtelStdout:
		// The span and the metric exporters write from goroutines of
		// their own.
		out = &lockedWriter{w: out}
		spans, err := stdouttrace.New(stdouttrace.WithWriter(out))
		if err != nil {
			return nil, nil, fmt.Errorf("otel: stdouttrace: %w", err)
		}
		metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(out))
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("otel: stdoutmetric: %w", err), spans.Shutdown(ctx))
		}
		return spans, metrics, nil
	case OtelOTLP:
		spans, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("otel: otlptracehttp: %w", err)
		}
		metrics, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("otel: otlpmetrichttp: %w", err), spans.Shutdown(ctx))
		}
		return spans, metrics, nil
	}
	return nil, nil, nil
}

// lockedWriter serialises the writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// routerOptions returns the tracing middleware for system (the first of
// router.Config.Middlewares) and the inbox observer next: telemetry reads
// the inbox's reports from each message's ackgap.Delivery, so next is the
// only observer.
func (o *observability) routerOptions(system string, next middleware.ObserverFunc) (message.HandlerMiddleware, middleware.ObserverFunc, error) {
	mw, err := o.tel.Middleware("", system)
	if err != nil {
		return nil, nil, err
	}
	return mw, next, nil
}

// results waits up to SpanWait for the consumer spans still open, and
// returns the run's timings, with the histogram counts read from the
// metrics. Call it once the routers closed.
func (o *observability) results(ctx context.Context, br demoBroker) (Timings, error) {
	o.timings.wait(ctx, SpanWait)
	t := o.timings.timings(br.name(), br.noLease())
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(ctx, &rm); err != nil {
		return t, fmt.Errorf("collect metrics: %w", err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != telemetry.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				continue
			}
			var n uint64
			for _, dp := range h.DataPoints {
				n += dp.Count
			}
			switch m.Name {
			case telemetry.MetricAckGap:
				t.MetricAckGaps = n
			case telemetry.MetricLeaseHeadroom:
				t.MetricLeaseHeadrooms = n
			}
		}
	}
	return t, nil
}

// close exports the metrics once more while the outbox gauges are still
// registered, ends the spans still open (telemetry.Telemetry.Close), and
// flushes and shuts down the providers, all within OtelShutdownTimeout.
// It is safe to call twice; later calls return the first call's result.
func (o *observability) close() error {
	o.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), OtelShutdownTimeout)
		defer cancel()
		err := errors.Join(o.mp.ForceFlush(ctx), o.tel.Close(), o.tp.Shutdown(ctx), o.mp.Shutdown(ctx))
		if err != nil {
			o.closeErr = fmt.Errorf("otel: %w", err)
		}
	})
	return o.closeErr
}

func (o *observability) shutdownProviders() error {
	ctx, cancel := context.WithTimeout(context.Background(), OtelShutdownTimeout)
	defer cancel()
	return errors.Join(o.tp.Shutdown(ctx), o.mp.Shutdown(ctx))
}
