package billingsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/console"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

// crashRun is what the crash of a router instance did
// (Options.CrashRestart).
type crashRun struct {
	crashed, replacement int
	// gaveUp is how long closing the crashed instance took: its
	// subscriber's CloseTimeout, and the rest of its shutdown.
	gaveUp time.Duration
	err    error
}

// run runs the demo on b: migrate, create and seed the orders, start the
// payment provider and the mailer on loopback (and the outbox relays, with
// o.RelaysDuring), open the broker o names and start one router instance
// per partition on it, publish the events with their injected duplicates,
// wait until every event was applied and every duplicate seen (crashing and
// replacing an instance on the way with o.CrashRestart), close the routers,
// start the relays (unless running already) and wait until they drained
// the outbox (all within o.Timeout), close everything, and read the
// results back from the database and the services. Every router instance
// is traced with package telemetry (o.Otel says where the spans and
// metrics go); the summary's timings come from those spans. The returned
// error means the demo could not run; whether it ran correctly is
// Summary.Check.
func run[TTx any](ctx context.Context, b *backend[TTx], o Options) (s *Summary, err error) {
	o = o.WithDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	p, err := newPlan(o)
	if err != nil {
		return nil, err
	}
	if _, err := b.outbox.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if err := createOrders(ctx, b.db, p.events); err != nil {
		return nil, err
	}

	// The outside world, and the relays that reach it: they carry out the
	// outbox rows while the routers write them, and after.
	svc, err := startServices()
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := svc.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close services: %w", cerr))
		}
	}()
	// Closed after the routers and the relays (deferred before them).
	var rec *console.Recorder
	var readers []sdkmetric.Reader
	if o.Console != "" {
		rec = console.NewRecorder()
		readers = append(readers, rec.Reader())
	}
	if o.Prometheus != "" {
		reader, stopMetrics, serr := servePrometheus(o.Prometheus, o.PrometheusReady)
		if serr != nil {
			return nil, serr
		}
		defer func() { err = errors.Join(err, stopMetrics()) }()
		readers = append(readers, reader)
	}
	obs, err := newObservability(ctx, o.Otel, o.OtelOut, b.outbox, readers...)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := obs.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if o.Console != "" {
		stopConsole, serr := serveConsole(o.Console, b.store, rec, o.ConsoleReady)
		if serr != nil {
			return nil, serr
		}
		defer func() { err = errors.Join(err, stopConsole()) }()
	}
	// The inbox is kept bounded as in a service: a pruner beside the
	// relays (README "Keep the inbox bounded"). Its first round runs at
	// once and finds no row older than the retention in a fresh demo.
	pr, err := startPruner(ctx, b.outbox)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, pr.stop()) }()
	lost := &lostReplies{keys: p.lostReplies}
	var rl *relays
	defer func() {
		if rl != nil {
			_ = rl.stop()
		}
	}()
	if o.RelaysDuring {
		if rl, err = startRelays(ctx, b.outbox, o.Relays, svc, lost, obs.tel); err != nil {
			return nil, err
		}
	}

	t := newTally(p)
	f := &faults{crashIDs: p.crash}
	dl := &deadLetters{reasons: map[string]int{}}

	// Every instance's router configuration; the broker may set the
	// handler timeout its lease needs.
	cfg := router.Config{
		CloseTimeout: 10 * time.Second,
		Logger:       o.Logger,
	}
	br, err := openBroker(ctx, o, &cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := br.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close broker %s: %w", br.name(), cerr))
		}
	}()
	tracing, observer, err := obs.routerOptions(br.system(), t.observe)
	if err != nil {
		return nil, err
	}
	cfg.Observer = observer
	dlPub, dlTopic := br.deadLetter()
	cfg.DeadLetter, cfg.DeadLetterTopic = countingPublisher{next: dlPub, dl: dl}, dlTopic

	var crash *instanceCrash
	if o.CrashRestart {
		crash = &instanceCrash{t: t, after: max(1, o.Events/4), crashed: make(chan *instance, 1)}
	}
	fl := &fleet[TTx]{store: b.store, br: br, cfg: cfg, tracing: tracing, f: f, crash: crash,
		runCtx: context.WithoutCancel(ctx)} // stopped by Close, not by ctx

	pubCtx, cancelPub := context.WithCancel(ctx)
	defer cancelPub()
	pubFinished := make(chan struct{})
	var pubErr error
	publishing := false
	var crashDone chan struct{}
	var cr crashRun
	var shutdownOnce sync.Once
	var shutdownErr error
	shutdown := func() error {
		shutdownOnce.Do(func() {
			cancelPub()
			if crashDone != nil {
				<-crashDone
			}
			err := fl.closeAll()
			if publishing {
				<-pubFinished // on GoChannel, a Publish waiting for an ack returns once its subscriber is gone
			}
			shutdownErr = err
		})
		return shutdownErr
	}
	defer func() { _ = shutdown() }()

	// One router instance per partition, all consumer "billing".
	for n := range o.Partitions {
		if _, err := fl.start(ctx, n); err != nil {
			return nil, err
		}
	}
	if err := br.ready(ctx, o.Partitions); err != nil {
		return nil, err
	}

	start := time.Now()
	publishing = true
	go func() {
		defer close(pubFinished)
		pubErr = publishAll(pubCtx, br, p, t, o.ExternalProducer)
	}()
	deadline := time.NewTimer(o.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	waitPub := pubFinished
	var settled <-chan time.Time
	var crashed <-chan *instance
	if crash != nil {
		crashed = crash.crashed
	}
	for waitPub != nil || !t.complete() {
		select {
		case <-waitPub:
			if pubErr != nil {
				return nil, fmt.Errorf("publish: %w", pubErr)
			}
			waitPub = nil
			if br.waitsForAck() {
				// Publish returned, so every message was acked: what has
				// not been seen by now will not come. Allow a moment, then
				// stop.
				settle := time.NewTimer(settleWait)
				defer settle.Stop()
				settled = settle.C
			}
		case inst := <-crashed:
			// An instance committed a message and "died" before its ack:
			// close it (its subscriber gives the message up, unacked) and
			// start a replacement, as a supervisor restarts a process.
			crashed = nil
			crashDone = make(chan struct{})
			cr.crashed, cr.replacement = inst.n, fl.count()
			go func() {
				defer close(crashDone)
				began := time.Now()
				cerr := inst.close()
				cr.gaveUp = time.Since(began)
				_, serr := fl.start(ctx, cr.replacement)
				cr.err = errors.Join(cerr, serr)
			}()
		case <-tick.C:
			if err := t.broken(); err != nil {
				return nil, err
			}
		case <-settled:
			dead, _ := dl.snapshot()
			return nil, fmt.Errorf("every message was acked, but the inbox did not see what it should (a duplicate that was applied means the inbox did not dedupe it): %s, %d dead-lettered",
				t.progress(p), dead)
		case <-deadline.C:
			dead, _ := dl.snapshot()
			return nil, fmt.Errorf("timed out after %s waiting for the consumer: publishing done: %t, %s, %d dead-lettered",
				o.Timeout, waitPub == nil, t.progress(p), dead)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	elapsed := time.Since(start)
	if err := shutdown(); err != nil {
		return nil, fmt.Errorf("shutdown: %w", err)
	}
	if cr.err != nil {
		return nil, fmt.Errorf("crash and restart of a router instance: %w", cr.err)
	}
	timings, err := obs.results(ctx, br)
	if err != nil {
		return nil, err
	}
	consumed := time.Now()
	relayCrashCut, relayCrashCharges, plannedRelayCrash := 0, 0, 0
	if !o.RelaysDuring {
		if o.RelayCrash > 0 {
			plannedRelayCrash = min(o.RelayCrash, 2*len(p.events))
			if relayCrashCut, relayCrashCharges, err = crashRelay(ctx, b.outbox, plannedRelayCrash, svc); err != nil {
				return nil, err
			}
		}
		if rl, err = startRelays(ctx, b.outbox, o.Relays, svc, lost, obs.tel); err != nil {
			return nil, err
		}
	}
	if err := rl.waitDrained(ctx, b.outbox, 2*len(p.events), deadline.C); err != nil {
		return nil, err
	}
	drained := time.Since(consumed)
	if err := rl.stop(); err != nil {
		return nil, fmt.Errorf("relays: %w", err)
	}

	orders, err := countOrders(ctx, b.db)
	if err != nil {
		return nil, err
	}
	outbox, err := countOutbox(ctx, b.outbox, p.events)
	if err != nil {
		return nil, err
	}
	dead, reasons := dl.snapshot()
	charges := svc.provider.counts()
	receiptCalls, receiptsSent := svc.mailer.counts()
	topoLabel, topo := br.topology(o.Partitions)
	producer := br.producer()
	t.mu.Lock()
	s = &Summary{
		Store: b.name, Location: b.location,
		Broker: br.name(), BrokerLocation: br.location(), TopologyLabel: topoLabel, Topology: topo, Producer: producer,
		Events: o.Events, Partitions: o.Partitions, Instances: fl.count(), Published: p.published,
		Deliveries:         f.deliveries.Load(),
		InjectedSequential: p.nSeq, InjectedCrash: p.nCrash, CrashesDone: int(f.crashes.Load()), InjectedConcurrent: p.nConc,
		Applied: t.outcomes[ackgap.OutcomeApplied], Duplicates: t.outcomes[ackgap.OutcomeDuplicate],
		Failed: t.outcomes[ackgap.OutcomeFailed], Rejected: t.outcomes[ackgap.OutcomeRejected],
		AppliedCommitUnknown: t.appliedUnreported, AppliedTwice: t.twice, UnknownEvents: t.unknown,
		DeadLettered: dead, DeadLetterReasons: reasons,
		OrdersMoved: orders.moved, OrdersMovedTwice: orders.movedTwice, OrdersNotMoved: orders.notMoved,
		OutboxRows: outbox.rows, OutboxBadOrders: outbox.badOrders, OutboxStray: outbox.stray,
		Elapsed: elapsed,

		InboxRetention: pr.retention, InboxPruneRounds: pr.rounds(), InboxPruneBusy: pr.busyRounds(), InboxPruned: pr.deleted(),
		Relays: o.Relays, RelaysWoken: rl.woken, RelaysDuring: o.RelaysDuring,
		OutboxDone: outbox.done, OutboxDead: outbox.dead, Drained: drained,
		Republished: rl.tally.republished, DeadErrors: rl.tally.deadErrs,
		LostReplies: int(lost.lost.Load()), PlannedLostReplies: len(p.lostReplies), RelayCrashCut: relayCrashCut, RelayCrashCharges: relayCrashCharges, PlannedRelayCrash: plannedRelayCrash,
		ChargesAttempted: charges.calls, ChargesMade: charges.charged,
		ChargeReplays: charges.replays, ChargeConflicts: charges.conflicts,
		ReceiptCalls: receiptCalls, ReceiptsSent: receiptsSent,
		Timings: timings,
	}
	t.mu.Unlock()
	s.ConcurrentRaced = t.raced(p)
	if o.CrashRestart {
		s.CrashRestart = true
		id, dups, after := t.crashed()
		if id != "" {
			s.InstanceCrashes = 1
			s.CrashEventID, s.CrashRedelivered, s.CrashRedeliveredAfter = id, dups, after
			s.CrashedInstance, s.ReplacementInstance, s.CrashGaveUp = cr.crashed, cr.replacement, cr.gaveUp
			s.CrashEffect = br.crashEffect()
		}
	}
	if o.Hold != nil {
		o.Hold(s)
	}
	return s, nil
}
