package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/telemetry"
)

// The end-to-end workload, issue 6's (6): publish to effect. A producer
// publishes order.placed events through a broker adapter, the billing
// handler consumes them behind ackgap's router and queues a charge and a
// receipt in the outbox, and an outbox relay carries both out over HTTP
// against a loopback provider; a run ends when every effect was called.

// Defaults and settings of the end-to-end workload.
const (
	// e2eEventsDefault is -e2e-events: the events of one run's burst.
	e2eEventsDefault = 500
	// e2eRunsDefault is -e2e-runs.
	e2eRunsDefault = 3
	// e2eWarmEvents are the events of each cell's unrecorded warm-up run.
	e2eWarmEvents = 100
	// e2eProbes is how many events each run publishes one at a time after
	// its burst, each once the previous one's effects were called, for the
	// latency of an event that waits behind no other.
	e2eProbes = 20
	// e2eConcurrency is the number of messages in the handler at once:
	// Kafka partitions, SQS workers, GoChannel topics.
	e2eConcurrency = 4
	// e2ePublishers is the number of producer goroutines of the burst.
	e2ePublishers = 8
	// e2eHandlerTimeout is the router's HandlerTimeout; the SQS queue's
	// visibility timeout and the Kafka subscriber's hold time follow from
	// it.
	e2eHandlerTimeout = 5 * time.Second
	// e2eRunTimeout bounds one run: a run whose effects are not all called
	// by then fails.
	e2eRunTimeout = time.Minute
	// e2eRelayConcurrency is the relay's Concurrency: the default, so a
	// provider that answers after 20 ms is not the bottleneck.
	e2eRelayConcurrency = outbox.ConcurrencyDefault
	// e2ePollInterval is the relay's PollInterval: the fallback on
	// PostgreSQL, whose NOTIFY wakes the relay at each commit; the only
	// wake-up on SQLite.
	e2ePollInterval = 10 * time.Millisecond
	// kafkaBrokersDefault and sqsEndpointDefault are where
	// tools/brokers.sh start runs kfake and fauxqs.
	kafkaBrokersDefault = "127.0.0.1:9092"
	sqsEndpointDefault  = "http://127.0.0.1:4566"
)

// e2eStores are the stores -e2e-stores accepts: PostgreSQL as migrated
// (its NOTIFY trigger wakes the relay) and SQLite (the relay polls).
var e2eStores = []string{"postgres", "sqlite"}

// e2eOptions are the flags of the end-to-end workload.
type e2eOptions struct {
	stores       []string
	brokers      []string
	events       int
	runs         int
	kafkaBrokers []string
	sqsEndpoint  string
}

// e2eFlags defines the end-to-end workload's flags on fs, filling o; the
// function it returns checks them once fs is parsed, against the stores
// -stores opens.
func e2eFlags(fs *flag.FlagSet, o *e2eOptions) func(opened []string) []error {
	brokers := fs.String("brokers", brokerKafka+","+brokerSQS,
		"brokers of the end-to-end workload (publish to effect): gochannel (the baseline without a broker process), kafka, sqs; empty: skip it")
	storesFlag := fs.String("e2e-stores", "postgres", "stores of the end-to-end workload: postgres, sqlite (each also in -stores)")
	fs.IntVar(&o.events, "e2e-events", e2eEventsDefault, "events per run of the end-to-end workload")
	fs.IntVar(&o.runs, "e2e-runs", e2eRunsDefault, "runs per cell of the end-to-end workload")
	kafka := fs.String("kafka-brokers", envOr("KAFKA_BROKERS", kafkaBrokersDefault),
		"Kafka bootstrap addresses, comma-separated (default: $KAFKA_BROKERS, else where tools/brokers.sh start runs kfake)")
	fs.StringVar(&o.sqsEndpoint, "sqs-endpoint", envOr("SQS_ENDPOINT", sqsEndpointDefault),
		"SQS endpoint URL (default: $SQS_ENDPOINT, else where tools/brokers.sh start runs fauxqs)")
	return func(opened []string) []error {
		var errs []error
		for _, b := range split(*brokers) {
			if !slices.Contains(allBrokers, b) {
				errs = append(errs, fmt.Errorf("-brokers: unknown broker %q (want %s)", b, strings.Join(allBrokers, ", ")))
			}
			o.brokers = append(o.brokers, b)
		}
		for _, s := range split(*storesFlag) {
			switch {
			case !slices.Contains(e2eStores, s):
				errs = append(errs, fmt.Errorf("-e2e-stores: unknown store %q (want %s)", s, strings.Join(e2eStores, ", ")))
			case len(o.brokers) > 0 && !slices.Contains(opened, s):
				errs = append(errs, fmt.Errorf("-e2e-stores: %s is not in -stores", s))
			}
			o.stores = append(o.stores, s)
		}
		if o.kafkaBrokers = split(*kafka); len(o.kafkaBrokers) == 0 && slices.Contains(o.brokers, brokerKafka) {
			errs = append(errs, errors.New("-kafka-brokers is empty"))
		}
		if o.events < 1 {
			errs = append(errs, fmt.Errorf("-e2e-events %d must be positive", o.events))
		}
		if o.runs < 1 {
			errs = append(errs, fmt.Errorf("-e2e-runs %d must be positive", o.runs))
		}
		return errs
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// e2eCell is one configuration of the end-to-end workload, measured
// several times: a store, a broker, with telemetry or without.
type e2eCell struct {
	be        backend
	broker    string
	telemetry bool
	conn      e2eBroker // nil when the cell is not measured
	// skip says why the cell is not measured; broken is set when that is
	// a failure (anything but an unreachable broker).
	skip    string
	broken  bool
	pid     int // the broker's process, for its CPU time; 0: unknown
	results []e2eResult
}

func (c *e2eCell) String() string {
	return fmt.Sprintf("e2e/%s/%s/%s", c.be.name(), c.broker, c.telemetryName())
}

func (c *e2eCell) telemetryName() string {
	if c.telemetry {
		return "sdk"
	}
	return "none"
}

// e2eResult is one run of an end-to-end cell.
type e2eResult struct {
	events    int             // events of the burst
	unique    int             // every event of the run, probes included, one order each
	elapsed   time.Duration   // first publish of the burst to the last of its effects
	latencies []time.Duration // publish to charge, of each probe
	mallocs   uint64          // heap allocations in the process during the burst
	cpuSelf   time.Duration   // CPU time of this process during the burst
	cpuSrv    time.Duration   // of the PostgreSQL backends (0: SQLite, or unknown)
	cpuBroker time.Duration   // of the broker's process (0: unknown, or none)
	// counts is what the run left in the database: state changes, outbox
	// rows.
	counts counts
	// charges and receipts are the effects carried out (distinct
	// idempotency keys the provider and the mailer saw).
	charges, receipts int
	// deliveries counts the inbox's reports; spans the consumer spans
	// exported and outcomes the ackgap.outcomes metric's sum (telemetry
	// only).
	deliveries, spans, outcomes int64
	errs                        int64
	firstErr                    error
}

func (r *e2eResult) rate() float64 { return float64(r.events) / r.elapsed.Seconds() }

// correct reports whether every event changed its order's state once, its
// two effects were recorded once and carried out once, nothing failed,
// and (with telemetry) every delivery had its span and its outcome
// counted; with why not.
func (r *e2eResult) correct(tel bool) (bool, string) {
	want := r.unique
	var bad []string
	if r.errs > 0 {
		bad = append(bad, fmt.Sprintf("%d errors (first: %v)", r.errs, r.firstErr))
	}
	if r.counts.transitions != int64(want) {
		bad = append(bad, fmt.Sprintf("state changes %d, want %d", r.counts.transitions, want))
	}
	if r.counts.charges != int64(want) || r.counts.receipts != int64(want) {
		bad = append(bad, fmt.Sprintf("outbox rows %d charges + %d receipts, want %d each", r.counts.charges, r.counts.receipts, want))
	}
	if r.charges != want || r.receipts != want {
		bad = append(bad, fmt.Sprintf("effects %d charges + %d receipts, want %d each", r.charges, r.receipts, want))
	}
	if tel && (r.spans != r.deliveries || r.outcomes != r.deliveries) {
		bad = append(bad, fmt.Sprintf("telemetry: %d consumer spans and %d outcomes counted for %d deliveries", r.spans, r.outcomes, r.deliveries))
	}
	if len(bad) == 0 {
		return true, ""
	}
	return false, strings.Join(bad, "; ")
}

// allCorrect reports whether the cell was measured (or skipped for an
// unreachable broker) and every run was correct, with the first failure.
func (c *e2eCell) allCorrect() (bool, string) {
	if c.broken {
		return false, c.skip
	}
	for i := range c.results {
		if ok, why := c.results[i].correct(c.telemetry); !ok {
			return false, why
		}
	}
	return true, ""
}

// runE2E runs the end-to-end workload, after the others: it opens a broker
// for each cell (a topic or queue of its own), runs each cell once
// unrecorded, then every cell once, then every cell again, and closes the
// brokers. A broker that does not answer is reported, not measured.
func runE2E(ctx context.Context, rep *report, progress io.Writer, started time.Time) error {
	o := rep.opts.e2e
	if len(o.brokers) == 0 {
		return nil
	}
	defer func() {
		for _, c := range rep.e2e {
			if c.conn != nil {
				if err := c.conn.close(); err != nil {
					fmt.Fprintln(progress, "benchmarks: cleanup:", err)
				}
			}
		}
	}()
	unreachable := map[string]string{}
	for _, be := range rep.backends {
		if !slices.Contains(o.stores, be.name()) {
			continue
		}
		for _, b := range allBrokers {
			if !slices.Contains(o.brokers, b) {
				continue
			}
			for _, tel := range []bool{false, true} {
				c := &e2eCell{be: be, broker: b, telemetry: tel}
				rep.e2e = append(rep.e2e, c)
				if why, ok := unreachable[b]; ok {
					c.skip = why
					continue
				}
				var err error
				c.conn, c.pid, err = openE2E(ctx, b, o)
				switch {
				case errors.Is(err, errUnreachable):
					unreachable[b] = "not measured: " + err.Error()
					c.skip = unreachable[b]
				case err != nil:
					c.skip, c.broken = "not measured: "+err.Error(), true
				}
			}
		}
	}
	rep.facts = append(rep.facts, e2eFacts(rep)...)
	var cells []*e2eCell
	for _, c := range rep.e2e {
		if c.conn != nil {
			cells = append(cells, c)
		} else {
			fmt.Fprintf(progress, "[e2e] %s: %s\n", c, c.skip)
		}
	}
	for _, c := range cells {
		res := c.runOnce(ctx, min(e2eWarmEvents, o.events), e2eProbes/4, "w")
		if err := ctx.Err(); err != nil {
			return err
		}
		if ok, why := res.correct(c.telemetry); !ok {
			fmt.Fprintf(progress, "[e2e warm-up] %s: NOT CORRECT: %s\n", c, why)
		}
	}
	fmt.Fprintf(progress, "[e2e warm-up done %.1fs]\n", time.Since(started).Seconds())
	total, done := len(cells)*o.runs, 0
	for run := range o.runs {
		for _, c := range cells {
			res := c.runOnce(ctx, o.events, e2eProbes, fmt.Sprintf("r%d", run+1))
			if err := ctx.Err(); err != nil {
				return err
			}
			c.results = append(c.results, res)
			done++
			mark := "ok"
			if ok, why := res.correct(c.telemetry); !ok {
				mark = "NOT CORRECT: " + why
			}
			fmt.Fprintf(progress, "[%3d/%d %5.1fs] %-40s %8.0f events/s  %s\n", done, total, time.Since(started).Seconds(), c, res.rate(), mark)
		}
	}
	return nil
}

// openE2E opens broker b for one cell, and finds its process.
func openE2E(ctx context.Context, b string, o e2eOptions) (e2eBroker, int, error) {
	switch b {
	case brokerKafka:
		k, err := openKafkaE2E(ctx, o.kafkaBrokers, router.MaxHoldTime(&router.Config{HandlerTimeout: e2eHandlerTimeout}))
		if err != nil {
			return nil, 0, err
		}
		return k, brokerProcess("kfake", o.kafkaBrokers[0]), nil
	case brokerSQS:
		s, err := openSQSE2E(ctx, o.sqsEndpoint)
		if err != nil {
			return nil, 0, err
		}
		host := strings.TrimPrefix(strings.TrimPrefix(o.sqsEndpoint, "http://"), "https://")
		return s, brokerProcess("fauxqs", strings.SplitN(host, "/", 2)[0]), nil
	}
	return newGoChannelE2E(), 0, nil
}

// poolPIDs returns the backend pids of the connections be's pool holds now
// when be is PostgreSQL, for their CPU time. They are read for each run,
// not once: pgx closes a connection whose query's context ends (a relay
// that stops in the middle of a claim), and the pool opens another.
func poolPIDs(ctx context.Context, be backend) []uint32 {
	p, ok := be.(*postgres)
	if !ok {
		return nil
	}
	var pids []uint32
	for _, c := range p.pool.AcquireAllIdle(ctx) {
		pids = append(pids, c.Conn().PgConn().PID())
		c.Release()
	}
	return pids
}

// outboxStore returns the store of be as the relay's.
func outboxStore(be backend) stores.OutboxStore {
	switch b := be.(type) {
	case *postgres:
		return b.store
	case *sqlite:
		return b.store
	}
	panic(fmt.Sprintf("benchmarks: no outbox store for %T", be))
}

// discard is the end-to-end runs' dead-letter publisher: nothing should be
// dead-lettered (the inbox observer reports it as an error), so it drops
// what it gets.
type discard struct{}

// Publish drops msgs.
func (discard) Publish(string, ...*message.Message) error { return nil }

// Close does nothing.
func (discard) Close() error { return nil }

// teardown runs cleanup functions in reverse order of their push, once.
type teardown []func() error

func (t *teardown) push(f func() error) { *t = append(*t, f) }

func (t *teardown) run() error {
	var errs []error
	for i := len(*t) - 1; i >= 0; i-- {
		errs = append(errs, (*t)[i]())
	}
	*t = nil
	return errors.Join(errs...)
}

// runOnce runs c once with n events in the burst and probes after it; tag
// makes the run's event ids its own. Failures are counted in the result,
// not returned: a run that fails is a run that was not correct.
func (c *e2eCell) runOnce(ctx context.Context, n, probes int, tag string) e2eResult {
	res := e2eResult{events: n, unique: n + probes}
	var errs errCounter
	if err := c.run(ctx, n, probes, tag, &res, &errs); err != nil {
		errs.add(err)
	}
	res.errs, res.firstErr = errs.n.Load(), errs.firstErr()
	return res
}

func (c *e2eCell) run(ctx context.Context, n, probes int, tag string, res *e2eResult, errs *errCounter) (err error) {
	p := newPlan(n+probes, 0, 1)
	if err := c.be.reset(ctx, p.orderIDs()); err != nil {
		return err
	}
	var td teardown
	defer func() { err = errors.Join(err, td.run()) }()
	svc, err := startEffects()
	if err != nil {
		return err
	}
	td.push(svc.close)

	var deliveries atomic.Int64
	cfg := &router.Config{DeadLetter: discard{}, HandlerTimeout: e2eHandlerTimeout}
	cfg.Observer = func(_ context.Context, rep *ackgap.InboxReport) {
		deliveries.Add(1)
		if rep.Outcome == ackgap.OutcomeFailed || rep.Outcome == ackgap.OutcomeRejected {
			errs.add(rep.Err)
		}
	}
	var tel *e2eTelemetry
	if c.telemetry {
		if tel, err = newE2ETelemetry(); err != nil {
			return err
		}
		td.push(func() error { return tel.shutdown(res) })
		mw, err := tel.tel.Middleware("", c.conn.system())
		if err != nil {
			return err
		}
		cfg.Middlewares = []message.HandlerMiddleware{mw}
	}

	var relayed atomic.Int64
	relay, err := outbox.New(outboxStore(c.be), &outbox.Config{
		Effects: map[string]outbox.Effect{
			kindCharge:  outbox.HTTP(svc.client, svc.chargesURL),
			kindReceipt: outbox.HTTP(svc.client, svc.receiptsURL),
		},
		Concurrency: e2eRelayConcurrency, PollInterval: e2ePollInterval,
		Observer: func(_ context.Context, rep *outbox.Report) {
			if rep.Outcome == outbox.OutcomeDone {
				relayed.Add(1)
				return
			}
			errs.add(fmt.Errorf("relay: row %s %s: %v", rep.Row.IdempotencyKey, rep.Outcome, rep.Err))
		},
	})
	if err != nil {
		return err
	}
	relayCtx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(relayCtx) }()
	td.push(func() error { stopRelay(); return <-relayDone })

	sub, topics, err := c.conn.begin(ctx)
	if err != nil {
		return err
	}
	r, err := c.be.safeRouter(cfg, sub, topics, true, false)
	if err != nil {
		return errors.Join(err, sub.Close(), c.conn.end())
	}
	routerDone := make(chan error, 1)
	go func() { routerDone <- r.Run(ctx); close(routerDone) }()
	td.push(func() error {
		err := r.Close()
		if rerr := <-routerDone; rerr != nil && !errors.Is(rerr, context.Canceled) {
			err = errors.Join(err, rerr)
		}
		return errors.Join(err, c.conn.end())
	})
	select {
	case <-r.Running():
	case err := <-routerDone:
		return fmt.Errorf("router stopped before running: %w", err)
	}
	if err := c.conn.ready(ctx); err != nil {
		return err
	}

	wctx, cancel := context.WithTimeout(ctx, e2eRunTimeout)
	defer cancel()
	publish := func(g int, ev *event) error {
		id := ev.eventID + "/" + tag
		msg := message.NewMessage(id, ev.payload)
		msg.Metadata.Set(eventIDKey, id)
		if tel != nil {
			pctx, span := tel.tracer.Start(ctx, "send order.placed", trace.WithSpanKind(trace.SpanKindProducer))
			defer span.End()
			tel.tel.Inject(pctx, msg)
		}
		if err := c.conn.publish(g, ev.orderID, msg); err != nil {
			cancel()
			return err
		}
		return nil
	}
	waitFor := func(at <-chan time.Time, what string) (time.Time, error) {
		select {
		case t := <-at:
			return t, nil
		case <-wctx.Done():
			if err := ctx.Err(); err != nil {
				return time.Time{}, err
			}
			charges, receipts := svc.counts()
			return time.Time{}, fmt.Errorf("%s: not every effect was called (%d charges, %d receipts, %d deliveries)", what, charges, receipts, deliveries.Load())
		}
	}

	// The burst: every event published at once by e2ePublishers
	// goroutines; it ends with the last effect.
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	pids := poolPIDs(ctx, c.be)
	cpu0 := readCPU(nil)
	srv0, srvOK0 := schedCPU(pids)
	broker0, brokerOK0 := processCPU(c.pid)
	allDone := svc.await(n)
	start := time.Now()
	var wg sync.WaitGroup
	for g := range e2ePublishers {
		wg.Go(func() {
			for i := g; i < n; i += e2ePublishers {
				if err := publish(g, &p.events[i]); err != nil {
					errs.add(fmt.Errorf("publish: %w", err))
					return
				}
			}
		})
	}
	last, err := waitFor(allDone, "burst")
	cpu1 := readCPU(nil)
	srv1, srvOK1 := schedCPU(pids)
	broker1, brokerOK1 := processCPU(c.pid)
	runtime.ReadMemStats(&after)
	wg.Wait()
	if err != nil {
		return err
	}
	res.elapsed = last.Sub(start)
	res.mallocs = after.Mallocs - before.Mallocs
	res.cpuSelf = cpu1.self - cpu0.self
	if srvOK0 && srvOK1 {
		res.cpuSrv = srv1 - srv0
	}
	if brokerOK0 && brokerOK1 {
		res.cpuBroker = broker1 - broker0
	}

	// The probes: one event at a time, each published once the previous
	// one's effects were called.
	for k := range probes {
		ev := &p.events[n+k]
		at := svc.await(n + k + 1)
		sent := time.Now()
		if err := publish(0, ev); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		if _, err := waitFor(at, "probe"); err != nil {
			return err
		}
		charged, _ := svc.chargedAt("charge:" + ev.orderID) // the charge's idempotency key (effects)
		res.latencies = append(res.latencies, charged.Sub(sent))
	}

	// Every effect was called; wait until the relay recorded them all,
	// then stop (router, relay, telemetry, effect server) and count.
	want := int64(2 * (n + probes))
	for relayed.Load() < want && wctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if err := td.run(); err != nil {
		return err
	}
	res.deliveries = deliveries.Load()
	res.charges, res.receipts = svc.counts()
	res.counts, err = c.be.counts(ctx)
	return err
}

// e2eTelemetry is package telemetry on the OpenTelemetry SDK, recording
// everything: every span sampled and exported in batches (to an exporter
// that counts them), every instrument read by a ManualReader.
type e2eTelemetry struct {
	tel    *telemetry.Telemetry
	tracer trace.Tracer
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
	spans  *spanCounter
}

func newE2ETelemetry() (*e2eTelemetry, error) {
	t := &e2eTelemetry{spans: &spanCounter{}, reader: sdkmetric.NewManualReader()}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(t.spans))
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(t.reader))
	var err error
	t.tel, err = telemetry.New(&telemetry.Config{TracerProvider: t.tp, MeterProvider: t.mp, Propagator: propagation.TraceContext{}})
	if err != nil {
		return nil, errors.Join(err, t.tp.Shutdown(context.Background()), t.mp.Shutdown(context.Background()))
	}
	t.tracer = t.tp.Tracer("github.com/ackgap/ackgap/benchmarks")
	return t, nil
}

// shutdown reads the metrics once, exports the spans left, ends the
// providers, and writes into res the consumer spans exported and the
// ackgap.outcomes metric's sum.
func (t *e2eTelemetry) shutdown(res *e2eResult) error {
	ctx := context.Background()
	var rm metricdata.ResourceMetrics
	errs := []error{t.reader.Collect(ctx, &rm), t.tel.Close(), t.tp.Shutdown(ctx), t.mp.Shutdown(ctx)}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == telemetry.MetricOutcomes {
				for _, dp := range sum.DataPoints {
					res.outcomes += dp.Value
				}
			}
		}
	}
	res.spans = t.spans.consumer.Load()
	return errors.Join(errs...)
}

// spanCounter is a span exporter that counts the consumer spans it gets
// and drops every span.
type spanCounter struct{ consumer atomic.Int64 }

var _ sdktrace.SpanExporter = (*spanCounter)(nil)

// ExportSpans counts the consumer spans of spans.
func (s *spanCounter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	for _, sp := range spans {
		if sp.SpanKind() == trace.SpanKindConsumer {
			s.consumer.Add(1)
		}
	}
	return nil
}

// Shutdown does nothing.
func (*spanCounter) Shutdown(context.Context) error { return nil }

// e2eFacts describes the end-to-end workload's brokers and telemetry, for
// the machine facts.
func e2eFacts(rep *report) []fact {
	o := rep.opts.e2e
	var facts []fact
	measured := func(b string) bool {
		for _, c := range rep.e2e {
			if c.broker == b && c.conn != nil {
				return true
			}
		}
		return false
	}
	cpu := func(b string) string {
		for _, c := range rep.e2e {
			if c.broker == b && c.pid != 0 {
				return fmt.Sprintf("; its CPU time is counted (pid %d)", c.pid)
			}
		}
		return "; its CPU time is not counted (process not found)"
	}
	if measured(brokerKafka) {
		facts = append(facts, fact{"end to end: Kafka", fmt.Sprintf("%s (tools/brokers.sh: kfake, franz-go's in-memory Kafka-protocol broker)%s; "+
			"Sarama %s through brokers/kafkabroker: a topic of %d partitions per cell, one consumer-group member, offset committed after each ack, fetch max wait %s",
			strings.Join(o.kafkaBrokers, ","), cpu(brokerKafka), moduleVersion("github.com/IBM/sarama"), e2eConcurrency, e2eFetchMaxWait)})
	}
	if measured(brokerSQS) {
		facts = append(facts, fact{"end to end: SQS", fmt.Sprintf("%s (tools/brokers.sh: fauxqs, an in-memory SQS server on Node)%s; "+
			"aws-sdk-go-v2 sqs %s through brokers/sqsbroker: a standard queue per run, one subscriber of %d workers, batches of 10, 20 s long polls, one SendMessage per event",
			o.sqsEndpoint, cpu(brokerSQS), moduleVersion("github.com/aws/aws-sdk-go-v2/service/sqs"), e2eConcurrency)})
	}
	if len(rep.e2e) > 0 {
		facts = append(facts,
			fact{"end to end: effects", fmt.Sprintf("one outbox relay per run (outbox.HTTP, concurrency %d, poll interval %s; PostgreSQL wakes it by NOTIFY) calling one loopback net/http server (provider and mailer)",
				e2eRelayConcurrency, e2ePollInterval)},
			fact{"end to end: telemetry sdk", fmt.Sprintf("OpenTelemetry SDK %s: every span sampled, batch span processor to an exporter that counts and drops, meter provider with a manual reader collected once per run",
				moduleVersion("go.opentelemetry.io/otel/sdk"))})
	}
	return facts
}

// moduleVersion returns the version of module path in this binary, or
// "(unknown version)".
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

// percentile returns the p-th percentile (0 < p <= 1) of ds by the
// nearest-rank method.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max(int(math.Ceil(p*float64(len(s))))-1, 0)]
}

// e2eStat returns the median, minimum and maximum over the runs of f.
func (c *e2eCell) e2eStat(f func(*e2eResult) float64) stat {
	vs := make([]float64, len(c.results))
	for i := range c.results {
		vs[i] = f(&c.results[i])
	}
	return statOf(vs)
}

// perEvent returns f of each run divided by the run's burst events.
func (c *e2eCell) perEvent(f func(*e2eResult) float64) stat {
	return c.e2eStat(func(r *e2eResult) float64 { return f(r) / float64(r.events) })
}

// cpuCol is the median CPU time per event of this process, the PostgreSQL
// backends and the broker, in µs; a part that is not known is "–".
func (c *e2eCell) cpuCol() string {
	parts := []string{fmt.Sprintf("%.0f", c.perEvent(func(r *e2eResult) float64 { return float64(r.cpuSelf.Microseconds()) }).med)}
	for _, f := range []func(*e2eResult) time.Duration{
		func(r *e2eResult) time.Duration { return r.cpuSrv },
		func(r *e2eResult) time.Duration { return r.cpuBroker },
	} {
		if v := c.perEvent(func(r *e2eResult) float64 { return float64(f(r).Microseconds()) }).med; v > 0 {
			parts = append(parts, fmt.Sprintf("%.0f", v))
		} else {
			parts = append(parts, "–")
		}
	}
	return strings.Join(parts, " + ")
}

// cpuTotal is the median CPU time per event of everything counted, in µs.
func (c *e2eCell) cpuTotal() float64 {
	return c.perEvent(func(r *e2eResult) float64 { return float64((r.cpuSelf + r.cpuSrv + r.cpuBroker).Microseconds()) }).med
}

// e2eMarkdown writes the end-to-end section of the report.
func (r *report) e2eMarkdown(b *strings.Builder) {
	if len(r.e2e) == 0 {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	o := r.opts.e2e
	w("\n## End to end (publish to effect)\n\n")
	w("A producer publishes %d order.placed events at once (%d goroutines) through the broker adapter; ackgap's router consumes them with the billing handler (%d in flight), ", o.events, e2ePublishers, e2eConcurrency)
	w("and an outbox relay carries out each event's charge and receipt over HTTP against a loopback provider. ")
	w("Throughput is events over the time from the first publish to the last effect called. ")
	w("Latency is publish to charge of %d more events per run, each published alone once the one before was carried out (%d runs: %d samples). ", e2eProbes, o.runs, e2eProbes*o.runs)
	w("CPU per event is counted over the burst. Telemetry sdk: package telemetry on the OpenTelemetry SDK, every span recorded and exported, every metric; none: no telemetry. ")
	w("%d runs per cell, after one unrecorded warm-up run; each run starts a new consumer (a new group member, queue reader or GoChannel) and relay. ", o.runs)
	w("State changes and effects count every event of the run, probes included, and must equal the unique events.\n\n")
	w("| store | broker | telemetry | events/s | µs/event (wall) | latency p50 / p99 (ms) | CPU µs/event: harness + PostgreSQL + broker | allocs/event | unique events | state changes | effects: charges / receipts | correct |\n")
	w("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, c := range r.e2e {
		if len(c.results) == 0 {
			mark := "–"
			if c.broken {
				mark = "**no**"
			}
			w("| %s | %s | %s | %s | – | – | – | – | – | – | – | %s |\n", c.be.name(), c.broker, c.telemetryName(), c.skip, mark)
			continue
		}
		rates := c.e2eStat((*e2eResult).rate)
		var lat []time.Duration
		for _, res := range c.results {
			lat = append(lat, res.latencies...)
		}
		m := c.medianRun()
		w("| %s | %s | %s | %s | %.0f | %.1f / %.1f | %s | %.0f | %d | %d | %d / %d | %s |\n", c.be.name(), c.broker, c.telemetryName(),
			fmtStat(rates, "%.0f"), 1e6/rates.med, ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)), c.cpuCol(),
			c.perEvent(func(r *e2eResult) float64 { return float64(r.mallocs) }).med,
			m.unique, m.counts.transitions, m.charges, m.receipts, e2eCorrectMark(c))
	}
	w("\nThe cost of telemetry: throughput with it over without, paired runs, median [min–max]; CPU and allocations it adds per event (medians).\n\n")
	w("| store | broker | sdk / none (throughput) | CPU µs/event added | allocs/event added |\n|---|---|---:|---:|---:|\n")
	for _, c := range r.e2e {
		if c.telemetry || len(c.results) == 0 {
			continue
		}
		sdk := r.findE2E(c.be.name(), c.broker, true)
		if sdk == nil {
			continue
		}
		n := min(len(c.results), len(sdk.results))
		vs := make([]float64, n)
		for i := range n {
			vs[i] = sdk.results[i].rate() / c.results[i].rate()
		}
		allocs := func(x *e2eCell) float64 {
			return x.perEvent(func(r *e2eResult) float64 { return float64(r.mallocs) }).med
		}
		w("| %s | %s | %s | %+.0f | %+.0f |\n", c.be.name(), c.broker, fmtStat(statOf(vs), "%.2f"), sdk.cpuTotal()-c.cpuTotal(), allocs(sdk)-allocs(c))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

func e2eCorrectMark(c *e2eCell) string {
	if ok, why := c.allCorrect(); !ok {
		return "**no**: " + why
	}
	return "yes"
}

// findE2E returns the measured cell of store, broker and telemetry, or
// nil.
func (r *report) findE2E(store, broker string, tel bool) *e2eCell {
	for _, c := range r.e2e {
		if c.be.name() == store && c.broker == broker && c.telemetry == tel && len(c.results) > 0 {
			return c
		}
	}
	return nil
}

// medianRun returns the run whose throughput is the median.
func (c *e2eCell) medianRun() *e2eResult {
	return &c.results[medianIndex(len(c.results), func(i int) float64 { return c.results[i].rate() })]
}
