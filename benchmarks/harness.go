package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	wmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/gochannelbroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

// kind is a workload.
type kind string

// The workloads. The first five are the (1)-(5); the last three
// measure the framework on GoChannel with a handler that does nothing.
const (
	// kindSafe is the billing handler through ackgap (router.New): inbox,
	// guarded transition and two outbox rows (ackgap.ApplyTransition,
	// unread), commit, ack, as examples/billing does.
	kindSafe kind = "safe"
	// kindSafeAdd is kindSafe by a handler that reads the transition's
	// outcome (PendingTransition.Result), then adds the rows with
	// ackgap.AddOutbox.
	kindSafeAdd kind = "safe-addoutbox"
	// kindUnsafe is the guarded UPDATE alone in a plain Watermill handler.
	kindUnsafe kind = "unsafe"
	// kindHand is the safe pattern by hand in a plain Watermill handler,
	// one statement per round trip.
	kindHand kind = "hand-written"
	// kindCeiling is the safe workload's SQL with no framework, pipelined
	// in one round trip on PostgreSQL.
	kindCeiling kind = "ceiling"
	// kindWatermill is a plain Watermill router with an empty handler.
	kindWatermill kind = "watermill"
	// kindDedup is kindWatermill behind Watermill's Deduplicator (in
	// memory, keyed on an Adler-32 of the payload: its defaults).
	kindDedup kind = "watermill-deduplicator"
	// kindInbox is ackgap's whole chain (router.New) with an empty
	// handler: the inbox row and the commit, durable.
	kindInbox kind = "ackgap-inbox"
)

// dbKinds are the database workloads, in table order.
var dbKinds = []kind{kindSafe, kindSafeAdd, kindHand, kindCeiling, kindUnsafe, kindBatched, kindBatched10}

// cell is one configuration measured several times.
type cell struct {
	be          backend // nil for the workloads without a database
	kind        kind
	concurrency int
	dupRate     float64
	plan        *plan
	results     []result
}

func (c *cell) String() string {
	store := "memory"
	if c.be != nil {
		store = c.be.name()
	}
	return fmt.Sprintf("%s/%s/c%d/dup%g", store, c.kind, c.concurrency, c.dupRate*100)
}

// result is one run of a cell.
type result struct {
	msgs     int           // messages published and acked
	distinct int           // different events among them
	elapsed  time.Duration // first publish to last ack
	mallocs  uint64        // heap allocations in the process during the run
	bytes    uint64        // bytes allocated
	cpuSelf  time.Duration // CPU time of this process during the run
	cpuSrv   time.Duration // CPU time of the database server's processes serving the run (0: unknown)
	handled  int64         // handler calls (the in-memory workloads)
	errs     int64         // handler errors, failed or rejected deliveries
	counts   counts
	firstErr error
}

func (r *result) rate() float64 { return float64(r.msgs) / r.elapsed.Seconds() }

// correct reports whether the run changed each event's state once and
// recorded each event's effects once, and nothing failed; with why not.
func (r *result) correct(k kind) (bool, string) {
	want := int64(r.distinct)
	var bad []string
	if r.errs > 0 {
		bad = append(bad, fmt.Sprintf("%d errors (first: %v)", r.errs, r.firstErr))
	}
	switch k {
	case kindSafe, kindSafeAdd, kindHand, kindCeiling, kindUnsafe, kindBatched, kindBatched10:
		if r.counts.transitions != want {
			bad = append(bad, fmt.Sprintf("state changes %d, want %d", r.counts.transitions, want))
		}
		if k != kindUnsafe && (r.counts.charges != want || r.counts.receipts != want) {
			bad = append(bad, fmt.Sprintf("effects %d charges + %d receipts, want %d each", r.counts.charges, r.counts.receipts, want))
		}
	case kindInbox:
		if r.counts.inbox != want {
			bad = append(bad, fmt.Sprintf("inbox rows %d, want %d", r.counts.inbox, want))
		}
	case kindDedup, kindWatermill:
		if k == kindDedup && r.handled != want {
			bad = append(bad, fmt.Sprintf("handled %d, want %d", r.handled, want))
		}
	}
	if len(bad) == 0 {
		return true, ""
	}
	return false, fmt.Sprint(bad)
}

// stat is the median, minimum and maximum of some runs' values.
type stat struct{ med, min, max float64 }

func statOf(vs []float64) stat {
	if len(vs) == 0 {
		return stat{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{med: med, min: s[0], max: s[len(s)-1]}
}

func (c *cell) rates() stat {
	vs := make([]float64, len(c.results))
	for i := range c.results {
		vs[i] = c.results[i].rate()
	}
	return statOf(vs)
}

// perMsg returns f of each run divided by the run's messages.
func (c *cell) perMsg(f func(*result) float64) stat {
	vs := make([]float64, len(c.results))
	for i := range c.results {
		vs[i] = f(&c.results[i]) / float64(max(c.results[i].msgs, 1))
	}
	return statOf(vs)
}

// allCorrect reports whether every run was correct, with the first
// failure.
func (c *cell) allCorrect() (bool, string) {
	for i := range c.results {
		if ok, why := c.results[i].correct(c.kind); !ok {
			return false, why
		}
	}
	return true, ""
}

// ratio returns the per-run ratios of a's throughput to b's (runs paired
// by their index: they ran one after the other), as a stat.
func ratio(a, b *cell) stat {
	n := min(len(a.results), len(b.results))
	vs := make([]float64, n)
	for i := range n {
		vs[i] = a.results[i].rate() / b.results[i].rate()
	}
	return statOf(vs)
}

// runOnce runs c once: resets the database, publishes c.plan's messages
// for at most d (and at most all of them), and reads the outcome.
func runOnce(ctx context.Context, c *cell, d time.Duration) (result, error) {
	if c.be != nil {
		var ids []string
		if c.kind != kindInbox {
			ids = c.plan.orderIDs()
		}
		if err := c.be.reset(ctx, ids); err != nil {
			return result{}, err
		}
	}
	runtime.GC()
	var res result
	var err error
	if c.kind == kindCeiling {
		res, err = runDirect(ctx, c, d)
	} else if c.kind == kindBatched || c.kind == kindBatched10 {
		res, err = runBatched(ctx, c, d)
	} else {
		res, err = runRouted(ctx, c, d)
	}
	if err != nil {
		return res, err
	}
	if c.be != nil {
		if res.counts, err = c.be.counts(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}

// errCounter counts handler errors and keeps the first.
type errCounter struct {
	n     atomic.Int64
	first atomic.Pointer[error]
}

func (e *errCounter) add(err error) {
	e.n.Add(1)
	e.first.CompareAndSwap(nil, &err)
}

func (e *errCounter) firstErr() error {
	if p := e.first.Load(); p != nil {
		return *p
	}
	return nil
}

// measure runs send for every partition on a goroutine of its own until
// d has passed or its messages ran out, and returns how many messages each
// partition sent, the time taken and the allocations made.
func measure(c *cell, d time.Duration, send func(partition, msg int) error, errs *errCounter) (sent []int, m meter) {
	sent = make([]int, c.concurrency)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := readCPU(c.be)
	start := time.Now()
	var wg sync.WaitGroup
	for p := range c.concurrency {
		wg.Go(func() {
			for i := p; i < len(c.plan.msgs); i += c.concurrency {
				if time.Since(start) >= d {
					return
				}
				if err := send(p, i); err != nil {
					errs.add(err)
					return
				}
				sent[p]++
			}
		})
	}
	wg.Wait()
	m.elapsed = time.Since(start)
	cpu1 := readCPU(c.be)
	runtime.ReadMemStats(&after)
	m.mallocs, m.bytes = after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc
	m.cpuSelf = cpu1.self - cpu0.self
	if cpu0.serverOK && cpu1.serverOK {
		m.cpuSrv = cpu1.server - cpu0.server
	}
	return sent, m
}

// meter is what measure measured besides the messages sent.
type meter struct {
	elapsed         time.Duration
	mallocs, bytes  uint64
	cpuSelf, cpuSrv time.Duration
}

// runDirect runs the ceiling: c.concurrency goroutines apply their
// events straight on the database.
func runDirect(ctx context.Context, c *cell, d time.Duration) (result, error) {
	var errs errCounter
	sent, m := measure(c, d, func(_, i int) error {
		if err := c.be.ceiling(ctx, &c.plan.events[c.plan.msgs[i]]); err != nil {
			errs.add(err) // counted, not retried: the run goes on
		}
		return nil
	}, &errs)
	return finish(c, sent, m, 0, &errs), nil
}

func finish(c *cell, sent []int, m meter, handled int64, errs *errCounter) result {
	n := 0
	for _, k := range sent {
		n += k
	}
	return result{msgs: n, distinct: c.plan.distinct(sent), elapsed: m.elapsed, mallocs: m.mallocs, bytes: m.bytes,
		cpuSelf: m.cpuSelf, cpuSrv: m.cpuSrv, handled: handled, errs: errs.n.Load(), firstErr: errs.firstErr()}
}

// runRouted runs a router workload: one GoChannel (gochannelbroker,
// ordered: Publish returns once the message was acked), one partition
// topic per unit of concurrency with a handler each, and one publisher
// goroutine per partition.
func runRouted(ctx context.Context, c *cell, d time.Duration) (result, error) {
	broker := gochannelbroker.New(nil)
	defer broker.Close()
	pub, _ := broker.Publisher()
	sub, _ := broker.Subscriber(consumer)
	topics := make([]string, c.concurrency)
	for i := range topics {
		topics[i] = topicPrefix + strconv.Itoa(i)
	}
	var errs errCounter
	var handled atomic.Int64
	var r runner
	switch c.kind {
	case kindSafe, kindSafeAdd, kindInbox:
		obs := func(_ context.Context, rep *ackgap.InboxReport) {
			if rep.Outcome == ackgap.OutcomeFailed || rep.Outcome == ackgap.OutcomeRejected {
				errs.add(rep.Err)
			}
		}
		var err error
		r, err = c.be.safeRouter(&router.Config{DeadLetter: pub, InboxConfig: middleware.InboxConfig{Observer: obs}}, sub, topics, c.kind == kindSafe, c.kind == kindInbox)
		if err != nil {
			return result{}, err
		}
	default:
		wr, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
		if err != nil {
			return result{}, err
		}
		var h message.NoPublishHandlerFunc
		switch c.kind {
		case kindUnsafe:
			h = c.be.unsafe
		case kindHand:
			h = c.be.handWritten
		default:
			h = func(*message.Message) error { handled.Add(1); return nil }
		}
		plain := func(msg *message.Message) error {
			//ackgapvet:ignore errack the baseline acks a failed message on purpose: its errors are counted, and a plain handler's error would be redelivered forever
			if err := h(msg); err != nil {
				errs.add(err) // acked anyway: a plain handler's error would be redelivered forever
			}
			return nil
		}
		var dedup *wmw.Deduplicator
		if c.kind == kindDedup {
			// A new memory per run, keyed on the SHA-256 of the whole
			// payload: the default Adler-32 key collides on these payloads
			// and drops distinct events as duplicates.
			dedup = &wmw.Deduplicator{KeyFactory: wmw.NewMessageHasherSHA256(math.MaxInt64)}
		}
		for _, t := range topics {
			hd := wr.AddConsumerHandler("billing/"+t, t, sub, plain)
			if dedup != nil {
				hd.AddMiddleware(dedup.Middleware)
			}
		}
		r = wr
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	select {
	case <-r.Running():
	case err := <-done:
		return result{}, fmt.Errorf("router stopped before running: %w", err)
	}
	sent, m := measure(c, d, func(p, i int) error {
		ev := &c.plan.events[c.plan.msgs[i]]
		msg := message.NewMessage(strconv.Itoa(i), ev.payload)
		msg.Metadata.Set(eventIDKey, ev.eventID)
		return pub.Publish(topics[p], msg)
	}, &errs)
	if err := r.Close(); err != nil {
		return result{}, fmt.Errorf("close router: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return result{}, fmt.Errorf("router: %w", err)
	}
	return finish(c, sent, m, handled.Load(), &errs), nil
}
