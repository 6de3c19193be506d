package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

// Defaults of [Options], also the defaults of the flags of the same names.
const (
	// EventsDefault is the number of orders and events (-n).
	EventsDefault = 1000
	// DupSeqDefault is the fraction of events published again after the
	// first pass (-dup-seq).
	DupSeqDefault = 0.1
	// DupCrashDefault is the fraction of events whose first delivery
	// commits and then "crashes" before the ack (-dup-crash).
	DupCrashDefault = 0.05
	// DupConcurrentDefault is the fraction of events published twice at
	// once, to two partitions (-dup-concurrent).
	DupConcurrentDefault = 0.05
	// PartitionsDefault is the number of partition topics and router
	// instances (-partitions).
	PartitionsDefault = 4
	// PartitionsMax caps Partitions.
	PartitionsMax = 256
	// TimeoutDefault bounds the wait for the consumer (-timeout).
	TimeoutDefault = 2 * time.Minute
	// SeedDefault picks which events are duplicated (-seed).
	SeedDefault = 1
	// RelaysDefault is the number of outbox relay instances (-relays).
	RelaysDefault = 2
	// RelaysMax caps Relays.
	RelaysMax = 16
	// RelayCrashDefault is how many rows a relay claims and calls out for
	// before the demo kills it mid-effect (-relay-crash).
	RelayCrashDefault = 8
	// LostRepliesDefault is the fraction of orders whose first charge
	// reply is lost after the provider charged (-lost-replies).
	LostRepliesDefault = 0.05
)

// settleWait is how long run still waits for outcomes once every publish
// returned (GoChannel's Publish returns after the ack, and the inbox
// reports before the ack, so nothing should be left by then).
const settleWait = 2 * time.Second

// Options configure one run of the demo. The duplicate fractions choose
// disjoint sets of events, so each event gets at most one kind of
// duplicate and their sum is at most 1.
type Options struct {
	// Events is the number of orders, and of order.placed events. Zero
	// means EventsDefault (1000).
	Events int
	// DupSeq is the fraction of events published a second time once the
	// first pass was processed: a plain redelivery. Zero means none.
	DupSeq float64
	// DupCrash is the fraction of events whose first delivery commits and
	// then fails before the ack, as if the process died in the ack gap:
	// GoChannel redelivers it. Zero means none.
	DupCrash float64
	// DupConcurrent is the fraction of events published twice at the same
	// instant to two partition topics, so two router instances race on
	// one event. Zero means none; needs Partitions >= 2.
	DupConcurrent float64
	// Partitions is the number of partition topics orders.placed.<p>, each
	// consumed by its own router instance. Zero means PartitionsDefault (4).
	Partitions int
	// Timeout bounds the wait for every event to be applied and every
	// duplicate to be seen. Zero means TimeoutDefault (2 min).
	Timeout time.Duration
	// Seed picks the duplicated events and the lost replies. Zero means
	// SeedDefault (1).
	Seed uint64
	// Relays is the number of outbox relays that carry out the charges
	// and receipts, while the routers consume and after. Zero means
	// RelaysDefault (2).
	Relays int
	// LostReplies is the fraction of orders whose first charge call
	// succeeds at the provider but whose reply the relay never gets (a
	// timeout after the charge): the relay retries with the same
	// idempotency key, and the provider answers with the original charge.
	// Zero means none.
	LostReplies float64
	// RelayCrash is how many rows a relay started before the others claims
	// and calls the effects for, and then dies without recording any
	// outcome (as under SIGKILL): the other relays carry those rows out
	// again after its lease (CrashRelayLease), with the same idempotency
	// keys. Zero means no relay crash; ignored with RelaysDuring.
	RelayCrash int
	// RelaysDuring starts the relays with the routers, so they carry out
	// rows while the consumer writes them, as in production. By default
	// they start once the consumer finished: the consumer's numbers
	// (throughput, concurrent copies that overlapped) then stay comparable
	// with runs without relays, and the relays' throughput shows alone.
	RelaysDuring bool
	// Logger receives Watermill's logs. Nil means none.
	Logger watermill.LoggerAdapter
}

// WithDefaults returns a copy of o with zero sizes set to their defaults;
// the fractions stay as they are (zero means no duplicates of that kind).
func (o Options) WithDefaults() Options {
	if o.Events == 0 {
		o.Events = EventsDefault
	}
	if o.Partitions == 0 {
		o.Partitions = PartitionsDefault
	}
	if o.Timeout == 0 {
		o.Timeout = TimeoutDefault
	}
	if o.Seed == 0 {
		o.Seed = SeedDefault
	}
	if o.Relays == 0 {
		o.Relays = RelaysDefault
	}
	if o.Logger == nil {
		o.Logger = watermill.NopLogger{}
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Events < 1 {
		errs = append(errs, fmt.Errorf("events (-n) is %d, must be at least 1", o.Events))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"dup-seq", o.DupSeq}, {"dup-crash", o.DupCrash}, {"dup-concurrent", o.DupConcurrent}, {"lost-replies", o.LostReplies}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			errs = append(errs, fmt.Errorf("%s is %g, must be in [0, 1]", f.name, f.v))
		}
	}
	seq, crash, conc := o.dupCounts()
	if seq+crash+conc > o.Events {
		errs = append(errs, fmt.Errorf("dup-seq + dup-crash + dup-concurrent select %d events of %d: the sets are disjoint, their sum must be at most 1", seq+crash+conc, o.Events))
	}
	if o.Partitions < 1 || o.Partitions > PartitionsMax {
		errs = append(errs, fmt.Errorf("partitions is %d, must be in [1, %d]", o.Partitions, PartitionsMax))
	}
	if conc > 0 && o.Partitions < 2 {
		errs = append(errs, fmt.Errorf("dup-concurrent publishes to two partitions: it needs partitions >= 2, have %d", o.Partitions))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout is %s, must be positive", o.Timeout))
	}
	if o.RelayCrash < 0 || o.RelayCrash > RelaysMax*RelayConcurrency {
		errs = append(errs, fmt.Errorf("relay-crash is %d, must be in [0, %d]", o.RelayCrash, RelaysMax*RelayConcurrency))
	}
	if o.Relays < 1 || o.Relays > RelaysMax {
		errs = append(errs, fmt.Errorf("relays is %d, must be in [1, %d]", o.Relays, RelaysMax))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid options: %w", err)
	}
	return nil
}

// dupCounts returns how many events get each kind of duplicate.
func (o Options) dupCounts() (seq, crash, conc int) {
	n := func(f float64) int {
		if math.IsNaN(f) || f <= 0 {
			return 0
		}
		return int(math.Round(float64(o.Events) * min(f, 1)))
	}
	return n(o.DupSeq), n(o.DupCrash), n(o.DupConcurrent)
}

// event is one order.placed event as the producer publishes it.
type event struct {
	body      OrderPlaced
	id        string // event id, the same in every copy
	partition int
	payload   []byte
}

// plan says what the producer publishes, and which duplicates it injects.
type plan struct {
	events []event
	// first lists, per partition, the events of the first pass published
	// once to their own partition (all but the concurrent ones).
	first [][]int
	// concurrent are published to two partitions at once.
	concurrent []int
	// sequential lists, per partition, the events published again after
	// the first pass.
	sequential [][]int
	// crash holds the event ids whose first delivery crashes after the
	// commit.
	crash map[string]bool
	// expectedDups is, per event id, how many duplicate deliveries the
	// inbox must skip.
	expectedDups map[string]int
	// published is the number of messages the producer publishes.
	published           int
	nSeq, nCrash, nConc int
	// lostReplies holds the charge idempotency keys whose first reply is
	// lost (Options.LostReplies).
	lostReplies map[string]bool
}

// partitionOf hashes an order id onto a partition, like Kafka's default
// partitioner hashes the message key.
func partitionOf(orderID string, partitions int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(orderID))
	return int(h.Sum32() % uint32(partitions))
}

func topic(partition int) string { return TopicPrefix + strconv.Itoa(partition) }

func newPlan(o Options) (*plan, error) {
	p := &plan{
		events:       make([]event, o.Events),
		first:        make([][]int, o.Partitions),
		sequential:   make([][]int, o.Partitions),
		crash:        map[string]bool{},
		expectedDups: make(map[string]int, o.Events),
	}
	for i := range p.events {
		body := OrderPlaced{
			OrderID:     fmt.Sprintf("ord-%06d", i+1),
			AmountCents: int64(500 + (i*7919)%99500),
			Email:       fmt.Sprintf("customer%06d@example.com", i+1),
		}
		payload, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		p.events[i] = event{body: body, id: EventID(body.OrderID), partition: partitionOf(body.OrderID, o.Partitions), payload: payload}
		p.expectedDups[p.events[i].id] = 0
	}
	p.nSeq, p.nCrash, p.nConc = o.dupCounts()
	perm := rand.New(rand.NewPCG(o.Seed, 0x62696c6c696e67)).Perm(o.Events)
	seq := perm[:p.nSeq]
	crash := perm[p.nSeq : p.nSeq+p.nCrash]
	p.concurrent = slices.Sorted(slices.Values(perm[p.nSeq+p.nCrash : p.nSeq+p.nCrash+p.nConc]))
	for _, i := range crash {
		p.crash[p.events[i].id] = true
		p.expectedDups[p.events[i].id]++
	}
	for _, i := range p.concurrent {
		p.expectedDups[p.events[i].id]++
	}
	for _, i := range slices.Sorted(slices.Values(seq)) {
		p.sequential[p.events[i].partition] = append(p.sequential[p.events[i].partition], i)
		p.expectedDups[p.events[i].id]++
	}
	isConc := make(map[int]bool, len(p.concurrent))
	for _, i := range p.concurrent {
		isConc[i] = true
	}
	for i, ev := range p.events {
		if !isConc[i] {
			p.first[ev.partition] = append(p.first[ev.partition], i)
		}
	}
	p.published = o.Events + p.nConc + p.nSeq
	p.lostReplies = map[string]bool{}
	if !math.IsNaN(o.LostReplies) && o.LostReplies > 0 {
		nLost := int(math.Round(float64(o.Events) * min(o.LostReplies, 1)))
		for _, i := range rand.New(rand.NewPCG(o.Seed, 0x6c6f7374)).Perm(o.Events)[:nLost] {
			p.lostReplies[ChargeKey(p.events[i].body.OrderID)] = true
		}
	}
	return p, nil
}

// publishAll is the producer. GoChannel is configured to block Publish
// until the subscriber acked, so each partition has one message in flight,
// like a Kafka partition consumed in order; P partitions process P
// messages at a time.
//
//  1. First pass: every event except the concurrent ones, once, to its
//     partition; P publishers, one per partition.
//  2. Concurrent pairs: both copies of an event released at the same
//     instant to two partitions, so two router instances race on it.
//  3. Sequential duplicates: the selected events again, to their
//     partitions, after everything before was acked.
func publishAll(pub message.Publisher, p *plan) error {
	if err := publishPartitions(pub, p, p.first); err != nil {
		return fmt.Errorf("first pass: %w", err)
	}
	for _, i := range p.concurrent {
		ev := &p.events[i]
		other := (ev.partition + 1) % len(p.first)
		release := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for k, part := range []int{ev.partition, other} {
			wg.Go(func() {
				<-release
				errs[k] = publish(pub, topic(part), ev)
			})
		}
		close(release)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("concurrent duplicates: %w", err)
		}
	}
	if err := publishPartitions(pub, p, p.sequential); err != nil {
		return fmt.Errorf("sequential duplicates: %w", err)
	}
	return nil
}

// publishPartitions publishes byPartition[k] to partition k, one publisher
// per partition, and returns when all were acked.
func publishPartitions(pub message.Publisher, p *plan, byPartition [][]int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(byPartition))
	for part, idx := range byPartition {
		wg.Go(func() {
			for _, i := range idx {
				if err := publish(pub, topic(part), &p.events[i]); err != nil {
					errs[part] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// publish sends one copy of ev. Every copy gets a new message UUID (as a
// broker gives every copy a new message id); the event id in metadata is
// what the inbox dedupes on.
func publish(pub message.Publisher, topic string, ev *event) error {
	msg := message.NewMessage(watermill.NewUUID(), ev.payload)
	msg.Metadata.Set(middleware.MetadataEventIDKey, ev.id)
	return pub.Publish(topic, msg)
}

// tally counts inbox outcomes (router.Config.Observer), per event.
type tally struct {
	mu       sync.Mutex
	outcomes map[middleware.Outcome]int
	events   map[string]*eventTally
	// remaining counts events not yet applied with every expected
	// duplicate seen.
	remaining int
	// twice counts events applied more than once: the inbox failed.
	twice int
	// unknown counts reports for event ids the producer never sent.
	unknown int
}

type eventTally struct {
	expectedDups, applied, dups int
	// committed is when the applying delivery committed; firstDup when
	// the earliest duplicate reached the inbox.
	committed, firstDup time.Time
	done                bool
}

func newTally(p *plan) *tally {
	t := &tally{outcomes: map[middleware.Outcome]int{}, events: make(map[string]*eventTally, len(p.events)), remaining: len(p.events)}
	for id, n := range p.expectedDups {
		t.events[id] = &eventTally{expectedDups: n}
	}
	return t
}

// observe is the router's Observer: called once per pass through the
// inbox, after the commit and before the ack. It must not block; it takes
// a mutex held for a few map operations.
func (t *tally) observe(_ context.Context, r *middleware.Report) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.outcomes[r.Outcome]++
	e := t.events[r.EventID]
	if e == nil {
		t.unknown++
		return
	}
	switch r.Outcome {
	case middleware.OutcomeApplied:
		e.applied++
		if e.applied == 1 {
			e.committed = r.Committed
		} else {
			t.twice++
		}
	case middleware.OutcomeDuplicate:
		e.dups++
		if e.firstDup.IsZero() || r.Received.Before(e.firstDup) {
			e.firstDup = r.Received
		}
	}
	if !e.done && e.applied >= 1 && e.dups >= e.expectedDups {
		e.done = true
		t.remaining--
	}
}

func (t *tally) complete() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.remaining == 0
}

// progress describes how far the consumer got, for the timeout error.
func (t *tally) progress(p *plan) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	applied, dups, expected := 0, 0, 0
	for _, e := range t.events {
		applied += min(e.applied, 1)
		dups += min(e.dups, e.expectedDups)
		expected += e.expectedDups
	}
	return fmt.Sprintf("applied %d/%d events, saw %d/%d injected duplicates, inbox outcomes %v",
		applied, len(p.events), dups, expected, t.outcomes)
}

// raced counts the concurrent pairs whose duplicate reached the inbox
// before the other copy had committed: the two really overlapped, and the
// inbox's unique key, not luck in timing, kept the second one out.
func (t *tally) raced(p *plan) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, i := range p.concurrent {
		e := t.events[p.events[i].id]
		if !e.firstDup.IsZero() && !e.committed.IsZero() && e.firstDup.Before(e.committed) {
			n++
		}
	}
	return n
}

// errSimulatedCrash is what the fault middleware returns after a commit,
// in place of the ack.
var errSimulatedCrash = errors.New("simulated crash after commit, before ack")

// faults is the outermost middleware (router.Config.Middlewares): it
// counts broker deliveries, and on the first delivery of a selected event
// turns the chain's nil (committed) into an error. The router's retry and
// dead-letter steps sit inside it, so the error reaches Watermill, which
// nacks, and GoChannel delivers the message again: the redelivery a crash
// between commit and ack causes.
type faults struct {
	deliveries atomic.Int64
	crashes    atomic.Int64
	crashIDs   map[string]bool
	crashed    sync.Map
}

func (f *faults) middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		f.deliveries.Add(1)
		produced, err := h(msg)
		if err != nil {
			return produced, err
		}
		if id := msg.Metadata.Get(middleware.MetadataEventIDKey); f.crashIDs[id] {
			if _, again := f.crashed.LoadOrStore(id, true); !again {
				f.crashes.Add(1)
				return nil, errSimulatedCrash
			}
		}
		return produced, nil
	}
}

// deadLetters counts what reaches the dead-letter topic.
type deadLetters struct {
	mu      sync.Mutex
	reasons map[string]int
}

func (d *deadLetters) add(reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reasons[reason]++
}

func (d *deadLetters) snapshot() (int, map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.reasons {
		n += c
	}
	return n, maps.Clone(d.reasons)
}

// instanceSubscriber is how a router instance sees the shared broker.
// Watermill's router closes its handlers' subscribers on Close; the
// GoChannel is shared by every instance (like one Kafka cluster), so an
// instance must only unsubscribe (Watermill cancels the subscription's
// context), and run closes the broker once, after every instance stopped.
type instanceSubscriber struct{ message.Subscriber }

// Close leaves the shared broker open.
func (instanceSubscriber) Close() error { return nil }

// backend is a store and the database it lives in, opened by openSQLite or
// openPostgres.
type backend[TTx any] struct {
	// name is "sqlite" or "postgres"; location the file or schema.
	name, location string
	store          stores.Store[TTx]
	// outbox is the same store, as the relays use it.
	outbox stores.OutboxStore
	db     appDB
	// close releases the database and, unless kept, deletes the demo's
	// data.
	close func() error
}

// run runs the demo on b: migrate, create and seed the orders, start the
// payment provider and the mailer on loopback (and the outbox relays, with
// o.RelaysDuring), start one router instance per partition on a
// GoChannel, publish the events with their injected duplicates, wait until
// every event was applied and every duplicate seen, close the routers,
// start the relays (unless running already) and wait until they drained
// the outbox (all within o.Timeout), close everything, and read the
// results back from the database and the services. The returned error
// means the demo could not run; whether it ran correctly is Summary.Check.
func run[TTx any](ctx context.Context, b *backend[TTx], o Options) (s *Summary, err error) {
	o = o.WithDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	p, err := newPlan(o)
	if err != nil {
		return nil, err
	}
	if _, err := b.store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
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
	lost := &lostReplies{keys: p.lostReplies}
	var rl *relays
	defer func() {
		if rl != nil {
			_ = rl.stop()
		}
	}()
	if o.RelaysDuring {
		if rl, err = startRelays(ctx, b.outbox, o.Relays, svc, lost); err != nil {
			return nil, err
		}
	}

	t := newTally(p)
	f := &faults{crashIDs: p.crash}
	dl := &deadLetters{reasons: map[string]int{}}

	// The broker: one GoChannel for every instance and the dead letters.
	// BlockPublishUntilSubscriberAck gives each topic one message in flight.
	pubsub := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, o.Logger)
	dlCtx, cancelDL := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelDL()
	dlMsgs, err := pubsub.Subscribe(dlCtx, router.DeadLetterTopicDefault)
	if err != nil {
		_ = pubsub.Close()
		return nil, fmt.Errorf("subscribe to dead letters: %w", err)
	}
	dlDone := make(chan struct{})
	go func() {
		defer close(dlDone)
		for msg := range dlMsgs {
			dl.add(msg.Metadata.Get(ackgap.MetadataDeadLetterReason))
			msg.Ack()
		}
	}()

	// One router instance per partition, all consumer "billing".
	cfg := &router.Config{
		DeadLetter:   pubsub,
		Middlewares:  []message.HandlerMiddleware{f.middleware},
		Observer:     t.observe,
		CloseTimeout: 10 * time.Second,
		Logger:       o.Logger,
	}
	var instances []*router.Router[TTx]
	runErrs := make(chan error, o.Partitions)
	pubFinished := make(chan struct{})
	var pubErr error
	publishing := false
	var shutdownOnce sync.Once
	var shutdownErr error
	shutdown := func() error {
		shutdownOnce.Do(func() {
			var errs []error
			for _, r := range instances {
				if err := r.Close(); err != nil {
					errs = append(errs, fmt.Errorf("close router: %w", err))
				}
			}
			for range instances {
				if err := <-runErrs; err != nil {
					errs = append(errs, fmt.Errorf("router: %w", err))
				}
			}
			cancelDL()
			<-dlDone
			errs = append(errs, pubsub.Close())
			if publishing {
				<-pubFinished // Publish returns once the broker is closed.
			}
			shutdownErr = errors.Join(errs...)
		})
		return shutdownErr
	}
	defer func() { _ = shutdown() }()

	runCtx := context.WithoutCancel(ctx) // stopped by Close, not by ctx
	h := handler[TTx]()
	for part := range o.Partitions {
		r, err := router.New(b.store, cfg)
		if err != nil {
			return nil, err
		}
		if err := r.AddHandler(Consumer, topic(part), instanceSubscriber{pubsub}, h); err != nil {
			return nil, err
		}
		instances = append(instances, r)
		go func() { runErrs <- r.Run(runCtx) }()
		select {
		case <-r.Running():
		case err := <-runErrs:
			runErrs <- err // shutdown reads one result per instance
			return nil, fmt.Errorf("router instance %d stopped at start: %w", part, err)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	start := time.Now()
	publishing = true
	go func() {
		defer close(pubFinished)
		pubErr = publishAll(pubsub, p)
	}()
	deadline := time.NewTimer(o.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	waitPub := pubFinished
	var settled <-chan time.Time
	for waitPub != nil || !t.complete() {
		select {
		case <-waitPub:
			if pubErr != nil {
				return nil, fmt.Errorf("publish: %w", pubErr)
			}
			waitPub = nil
			// Publish returned, so every message was acked: what has not
			// been seen by now will not come. Allow a moment, then stop.
			settle := time.NewTimer(settleWait)
			defer settle.Stop()
			settled = settle.C
		case <-tick.C:
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
	consumed := time.Now()
	relayCrashCut, relayCrashCharges, plannedRelayCrash := 0, 0, 0
	if !o.RelaysDuring {
		if o.RelayCrash > 0 {
			plannedRelayCrash = min(o.RelayCrash, 2*len(p.events))
			if relayCrashCut, relayCrashCharges, err = crashRelay(ctx, b.outbox, plannedRelayCrash, svc); err != nil {
				return nil, err
			}
		}
		if rl, err = startRelays(ctx, b.outbox, o.Relays, svc, lost); err != nil {
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
	outbox, err := countOutbox(ctx, b.store, p.events)
	if err != nil {
		return nil, err
	}
	dead, reasons := dl.snapshot()
	charges := svc.provider.counts()
	receiptCalls, receiptsSent := svc.mailer.counts()
	t.mu.Lock()
	s = &Summary{
		Store: b.name, Location: b.location,
		Events: o.Events, Partitions: o.Partitions, Published: p.published,
		Deliveries:         f.deliveries.Load(),
		InjectedSequential: p.nSeq, InjectedCrash: p.nCrash, CrashesDone: int(f.crashes.Load()), InjectedConcurrent: p.nConc,
		Applied: t.outcomes[middleware.OutcomeApplied], Duplicates: t.outcomes[middleware.OutcomeDuplicate],
		Failed: t.outcomes[middleware.OutcomeFailed], Rejected: t.outcomes[middleware.OutcomeRejected],
		AppliedTwice: t.twice, UnknownEvents: t.unknown,
		DeadLettered: dead, DeadLetterReasons: reasons,
		OrdersMoved: orders.moved, OrdersMovedTwice: orders.movedTwice, OrdersNotMoved: orders.notMoved,
		OutboxRows: outbox.rows, OutboxBadOrders: outbox.badOrders, OutboxStray: outbox.stray,
		Elapsed: elapsed,

		Relays: o.Relays, RelaysWoken: rl.woken, RelaysDuring: o.RelaysDuring,
		OutboxDone: outbox.done, OutboxDead: outbox.dead, Drained: drained,
		Republished: rl.tally.republished, DeadErrors: rl.tally.deadErrs,
		LostReplies: int(lost.lost.Load()), PlannedLostReplies: len(p.lostReplies), RelayCrashCut: relayCrashCut, RelayCrashCharges: relayCrashCharges, PlannedRelayCrash: plannedRelayCrash,
		ChargesAttempted: charges.calls, ChargesMade: charges.charged,
		ChargeReplays: charges.replays, ChargeConflicts: charges.conflicts,
		ReceiptCalls: receiptCalls, ReceiptsSent: receiptsSent,
	}
	t.mu.Unlock()
	s.ConcurrentRaced = t.raced(p)
	return s, nil
}
