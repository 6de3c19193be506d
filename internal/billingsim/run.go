package billingsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/examples/billing/orders"
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
	// PartitionsDefault is the number of partitions and router instances
	// (-partitions).
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
// returned on a broker whose Publish returns after the ack (GoChannel; the
// inbox reports before the ack, so nothing should be left by then).
const settleWait = 2 * time.Second

// Options configure one run of the demo. The duplicate fractions choose
// disjoint sets of events, so each event gets at most one kind of
// duplicate and their sum is at most 1.
type Options struct {
	// Broker is BrokerGoChannel (in-process, the default when empty),
	// BrokerKafka or BrokerSQS.
	Broker string
	// KafkaBrokers are the Kafka bootstrap addresses for BrokerKafka.
	// Empty means KafkaBrokersDefault (127.0.0.1:9092).
	KafkaBrokers []string
	// SQSEndpoint is the SQS endpoint URL for BrokerSQS. Empty means
	// SQSEndpointDefault (http://127.0.0.1:4566).
	SQSEndpoint string
	// Events is the number of orders, and of order.placed events. Zero
	// means EventsDefault (1000).
	Events int
	// DupSeq is the fraction of events published a second time once the
	// first pass was processed: a plain redelivery. Zero means none.
	DupSeq float64
	// DupCrash is the fraction of events whose first delivery commits and
	// then fails before the ack, as if the process died in the ack gap:
	// the broker delivers it again (GoChannel at once, Kafka from the same
	// offset, SQS after sqsbroker's nack delay). Zero means none.
	DupCrash float64
	// DupConcurrent is the fraction of events published twice at the same
	// instant, to two partitions (GoChannel topics, Kafka partitions) or
	// to the one SQS queue, so two router instances race on one event.
	// Zero means none; needs Partitions >= 2.
	DupConcurrent float64
	// CrashRestart crashes one router instance in the ack gap (Kafka and
	// SQS only): once a quarter of the events were applied, the first
	// instance to commit an event that has no other duplicate stops right
	// there, before its ack. The demo closes that instance's router; its
	// subscriber gives the message up after SubscriberCloseTimeout without
	// acking it (Kafka: the offset is not committed; SQS: it is not
	// deleted and its lease is no longer extended), and a replacement
	// instance starts. The broker delivers the message again (Kafka: to
	// the partition's next owner in the group; SQS: to any instance once
	// its visibility timeout lapses) and the inbox must skip it. This is
	// an in-process crash; a real SIGKILL of a consumer process is tested
	// by brokers/brokertest. The -crash-restart flag defaults to true on
	// Kafka and SQS.
	CrashRestart bool
	// ExternalProducer has the events published by a client nobody here
	// wrote instead of ackgap's publisher: kcat (librdkafka) on Kafka,
	// Node's @aws-sdk/client-sqs (tools/fauxqs/produce.mjs) on SQS. They
	// set the event id as the Kafka header or SQS message attribute
	// event_id. The sequential copies are published by it too; concurrent
	// copies are not offered (DupConcurrent must be 0).
	ExternalProducer bool
	// Partitions is the number of partitions (GoChannel topics
	// orders.placed.<p>, or the Kafka topic's partitions) and of router
	// instances; on SQS, the number of router instances on the queue.
	// Zero means PartitionsDefault (4).
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
	// Otel is where the run's spans and metrics are exported: OtelNone
	// (the default when empty), OtelStdout or OtelOTLP. Every router
	// instance traces its deliveries through package telemetry whatever
	// it is, and the summary gets the ack gap and lease headroom from the
	// spans.
	Otel string
	// OtelOut receives OtelStdout's JSON. Nil means os.Stdout.
	OtelOut io.Writer
	// Logger receives Watermill's logs. Nil means none.
	Logger watermill.LoggerAdapter
}

// WithDefaults returns a copy of o with zero sizes set to their defaults;
// the fractions stay as they are (zero means no duplicates of that kind).
func (o Options) WithDefaults() Options {
	if o.Broker == "" {
		o.Broker = BrokerGoChannel
	}
	if len(o.KafkaBrokers) == 0 {
		o.KafkaBrokers = []string{KafkaBrokersDefault}
	}
	if o.SQSEndpoint == "" {
		o.SQSEndpoint = SQSEndpointDefault
	}
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
	if o.Otel == "" {
		o.Otel = OtelNone
	}
	if o.OtelOut == nil {
		o.OtelOut = os.Stdout
	}
	if o.Logger == nil {
		o.Logger = watermill.NopLogger{}
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	switch o.Broker {
	case BrokerGoChannel, BrokerKafka, BrokerSQS:
	default:
		errs = append(errs, fmt.Errorf("broker is %q, must be %s, %s or %s", o.Broker, BrokerGoChannel, BrokerKafka, BrokerSQS))
	}
	switch o.Otel {
	case OtelNone, OtelStdout, OtelOTLP:
	default:
		errs = append(errs, fmt.Errorf("otel is %q, must be %s, %s or %s", o.Otel, OtelNone, OtelStdout, OtelOTLP))
	}
	if o.Broker == BrokerGoChannel && o.CrashRestart {
		errs = append(errs, errors.New("crash-restart needs a broker that keeps what an instance did not ack (kafka or sqs): GoChannel's messages die with the instance"))
	}
	if o.Broker == BrokerGoChannel && o.ExternalProducer {
		errs = append(errs, errors.New("external-producer needs kafka (kcat) or sqs (Node's @aws-sdk/client-sqs): GoChannel lives inside this process"))
	}
	for i, b := range o.KafkaBrokers {
		if strings.TrimSpace(b) == "" {
			errs = append(errs, fmt.Errorf("kafka-brokers[%d] is empty", i))
		}
	}
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
	if conc > 0 && o.ExternalProducer {
		errs = append(errs, errors.New("dup-concurrent is not offered with external-producer: set it to 0"))
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
	body      orders.OrderPlaced
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
// partitioner hashes the message key. It picks the GoChannel topic; on
// Kafka it only spreads the producer's work over goroutines (Kafka's
// partitioner, murmur2 over the key, places the record).
func partitionOf(orderID string, partitions int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(orderID))
	return int(h.Sum32() % uint32(partitions))
}

func newPlan(o Options) (*plan, error) {
	p := &plan{
		events:       make([]event, o.Events),
		first:        make([][]int, o.Partitions),
		sequential:   make([][]int, o.Partitions),
		crash:        map[string]bool{},
		expectedDups: make(map[string]int, o.Events),
	}
	for i := range p.events {
		body := orders.OrderPlaced{
			OrderID:     fmt.Sprintf("ord-%06d", i+1),
			AmountCents: int64(500 + (i*7919)%99500),
			Email:       fmt.Sprintf("customer%06d@example.com", i+1),
		}
		payload, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		p.events[i] = event{body: body, id: orders.EventID(body.OrderID), partition: partitionOf(body.OrderID, o.Partitions), payload: payload}
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
			p.lostReplies[orders.ChargeKey(p.events[i].body.OrderID)] = true
		}
	}
	return p, nil
}

// publishAll is the producer, in three phases:
//
//  1. First pass: every event except the concurrent ones, once; one
//     publisher goroutine per partition.
//  2. Concurrent pairs: both copies of an event released at the same
//     instant, the second to another partition (br.publish's other), so
//     two router instances race on it; one pair at a time.
//  3. Sequential duplicates: the selected events again.
//
// Each phase starts once the inbox has seen what the one before sent: the
// first pass applied, each pair's two copies. On GoChannel Publish returns
// after the ack, so these waits return at once; on Kafka and SQS Publish
// returns when the broker stored the message, and the waits keep the
// phases apart as they are on GoChannel. With Options.ExternalProducer
// phases 1 and 3 are published by the external client (phase 2 is empty).
func publishAll(ctx context.Context, br demoBroker, p *plan, t *tally, external bool) error {
	if external {
		ext, ok := br.(externalProducer)
		if !ok {
			return fmt.Errorf("broker %s has no external producer", br.name())
		}
		publish := func(byPartition [][]int) error {
			var evs []*event
			for _, idx := range byPartition {
				for _, i := range idx {
					evs = append(evs, &p.events[i])
				}
			}
			return ext.produceExternal(ctx, evs)
		}
		if err := publish(p.first); err != nil {
			return fmt.Errorf("first pass: %w", err)
		}
		if err := t.waitUntil(ctx, func() bool { return t.appliedEvents >= len(p.events) }); err != nil {
			return err
		}
		if err := publish(p.sequential); err != nil {
			return fmt.Errorf("sequential duplicates: %w", err)
		}
		return nil
	}

	if err := publishPartitions(ctx, br, p, p.first); err != nil {
		return fmt.Errorf("first pass: %w", err)
	}
	firstPass := len(p.events) - len(p.concurrent)
	if err := t.waitUntil(ctx, func() bool { return t.appliedEvents >= firstPass }); err != nil {
		return err
	}
	for _, i := range p.concurrent {
		ev := &p.events[i]
		release := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for k := range 2 {
			wg.Go(func() {
				<-release
				errs[k] = br.publish(ev, k == 1)
			})
		}
		close(release)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("concurrent duplicates: %w", err)
		}
		if err := t.waitUntil(ctx, func() bool { e := t.events[ev.id]; return e.applied+e.dups >= 2 }); err != nil {
			return err
		}
	}
	if err := publishPartitions(ctx, br, p, p.sequential); err != nil {
		return fmt.Errorf("sequential duplicates: %w", err)
	}
	return nil
}

// publishPartitions publishes byPartition[k] to partition k, one publisher
// per partition, and returns when all were published (on GoChannel:
// acked).
func publishPartitions(ctx context.Context, br demoBroker, p *plan, byPartition [][]int) error {
	per := br.publishersPerPartition()
	var wg sync.WaitGroup
	errs := make([]error, len(byPartition)*per)
	for part, idx := range byPartition {
		for k := range per {
			wg.Go(func() {
				for j := k; j < len(idx); j += per {
					if err := ctx.Err(); err != nil {
						errs[part*per+k] = err
						return
					}
					if err := br.publish(&p.events[idx[j]], false); err != nil {
						errs[part*per+k] = err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tally counts inbox outcomes (router.Config.Observer), per event.
type tally struct {
	mu       sync.Mutex
	outcomes map[middleware.Outcome]int
	events   map[string]*eventTally
	// remaining counts events not yet applied with every expected
	// duplicate seen.
	remaining int
	// appliedEvents counts events applied at least once.
	appliedEvents int
	// twice counts events applied more than once: the inbox failed.
	twice int
	// unknown counts reports for event ids the producer never sent.
	unknown int
	// crashID is the event whose delivery the crashed instance committed
	// and never acked (Options.CrashRestart), crashAt when.
	crashID string
	crashAt time.Time
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
			t.appliedEvents++
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

// broken returns an error once the inbox applied an event twice or saw an
// event never published: the run cannot end well, so it ends at once.
func (t *tally) broken() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.twice > 0 || t.unknown > 0 {
		return fmt.Errorf("the inbox applied %d events more than once and saw %d deliveries of unknown events: inbox outcomes %v", t.twice, t.unknown, t.outcomes)
	}
	return nil
}

// waitUntil polls cond, under the tally's lock, until it holds or ctx
// ends.
func (t *tally) waitUntil(ctx context.Context, cond func() bool) error {
	for {
		t.mu.Lock()
		ok := cond()
		t.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Microsecond):
		}
	}
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

// takeForCrash decides whether the delivery of id that just committed is
// the one a crashing instance never acks (Options.CrashRestart): the first
// delivery, once after applied events, of an event with no other duplicate
// planned, which was applied by this very delivery. If so it expects one
// more duplicate of id: the broker's redelivery.
func (t *tally) takeForCrash(id string, after int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.events[id]
	if t.crashID != "" || t.appliedEvents < after || e == nil || e.expectedDups != 0 || e.applied != 1 || e.dups != 0 {
		return false
	}
	t.crashID, t.crashAt = id, time.Now()
	e.expectedDups++
	if e.done {
		e.done = false
		t.remaining++
	}
	return true
}

// crashed returns the crashed instance's event, how many duplicates of it
// reached the inbox, and how long after the crash the first one did.
func (t *tally) crashed() (id string, dups int, after time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.crashID == "" {
		return "", 0, 0
	}
	e := t.events[t.crashID]
	if !e.firstDup.IsZero() {
		after = e.firstDup.Sub(t.crashAt)
	}
	return t.crashID, e.dups, after
}

// errSimulatedCrash is what the fault middleware returns after a commit,
// in place of the ack.
var errSimulatedCrash = errors.New("simulated crash after commit, before ack")

// faults is the outermost middleware (router.Config.Middlewares): it
// counts broker deliveries, and on the first delivery of a selected event
// turns the chain's nil (committed) into an error. The router's retry and
// dead-letter steps sit inside it, so the error reaches Watermill, which
// nacks, and the broker delivers the message again: the redelivery a crash
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
		if id := msg.Metadata.Get(ackgap.MetadataEventIDKey); f.crashIDs[id] {
			if _, again := f.crashed.LoadOrStore(id, true); !again {
				f.crashes.Add(1)
				return nil, errSimulatedCrash
			}
		}
		return produced, nil
	}
}

// errInstanceCrashed is what the crashed instance's hung handler finally
// returns, to a router and a subscriber that have already let go of the
// message: nothing acks it.
var errInstanceCrashed = errors.New("router instance crashed after the commit, before the ack")

// instanceCrash is Options.CrashRestart. Its middleware, outermost in
// every instance, lets one delivery commit and then never return to the
// router while the instance is alive: the ack never comes, as when the
// process dies in the ack gap. run then closes that instance (its
// subscriber gives the message up after SubscriberCloseTimeout, unacked)
// and starts a replacement.
type instanceCrash struct {
	t *tally
	// after is how many events must be applied before the crash.
	after int
	// crashed receives the instance that crashed, once.
	crashed chan *instance
}

func (c *instanceCrash) middleware(inst *instance) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			if err != nil || !c.t.takeForCrash(msg.Metadata.Get(ackgap.MetadataEventIDKey), c.after) {
				return produced, err
			}
			// Committed. The instance dies here: no ack, no nack.
			c.crashed <- inst
			<-inst.sub.gone // its subscriber let go of the message, unacked
			return nil, errInstanceCrashed
		}
	}
}

// instance is one router instance: a router.Router with one handler for
// consumer "billing", on a subscriber of its own.
type instance struct {
	n    int
	r    interface{ Close() error }
	sub  *watchedSubscriber
	done chan error // Run's result

	closeOnce sync.Once
	closeErr  error
}

// close closes the router (which closes its subscriber) and waits for Run.
func (in *instance) close() error {
	in.closeOnce.Do(func() {
		err := in.r.Close()
		if rerr := <-in.done; rerr != nil {
			err = errors.Join(err, rerr)
		}
		if err != nil {
			in.closeErr = fmt.Errorf("router instance %d: %w", in.n, err)
		}
	})
	return in.closeErr
}

// fleet starts and closes the router instances.
type fleet[TTx any] struct {
	store stores.Store[TTx]
	br    demoBroker
	cfg   router.Config
	// tracing is package telemetry's middleware, outermost in every
	// instance.
	tracing message.HandlerMiddleware
	f       *faults
	crash   *instanceCrash
	runCtx  context.Context

	mu  sync.Mutex
	all []*instance
}

// start starts router instance n on a subscriber of its own and waits
// until it runs.
func (fl *fleet[TTx]) start(ctx context.Context, n int) (*instance, error) {
	sub, topic, err := fl.br.subscriber(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("router instance %d: subscriber: %w", n, err)
	}
	inst := &instance{n: n, sub: newWatchedSubscriber(sub), done: make(chan error, 1)}
	cfg := fl.cfg
	cfg.Middlewares = []message.HandlerMiddleware{fl.tracing, fl.f.middleware}
	if fl.crash != nil {
		cfg.Middlewares = append(cfg.Middlewares, fl.crash.middleware(inst))
	}
	r, err := router.New(fl.store, &cfg)
	if err == nil {
		err = r.AddHandler(orders.Consumer, topic, inst.sub, orders.Handler[TTx]())
	}
	if err != nil {
		return nil, errors.Join(err, inst.sub.Close())
	}
	inst.r = r
	fl.mu.Lock()
	fl.all = append(fl.all, inst)
	fl.mu.Unlock()
	go func() { inst.done <- r.Run(fl.runCtx) }()
	select {
	case <-r.Running():
		return inst, nil
	case err := <-inst.done:
		inst.done <- err // close reads it
		return nil, fmt.Errorf("router instance %d stopped at start: %w", n, err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// closeAll closes every instance at once (on Kafka one after the other
// would rebalance the group at each) and waits for them.
func (fl *fleet[TTx]) closeAll() error {
	fl.mu.Lock()
	all := slices.Clone(fl.all)
	fl.mu.Unlock()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, inst := range all {
		wg.Go(func() { errs[i] = inst.close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (fl *fleet[TTx]) count() int {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return len(fl.all)
}

// backend is a store and the database it lives in, opened by openSQLite or
// openPostgres.
type backend[TTx any] struct {
	// name is "sqlite" or "postgres"; location the file or schema.
	name, location string
	// schema is the PostgreSQL schema the store and the orders live in;
	// empty on SQLite.
	schema string
	store  stores.Store[TTx]
	// outbox is the same store, as the relays use it.
	outbox stores.OutboxStore
	db     appDB
	// close releases the database and, unless kept, deletes the demo's
	// data.
	close func() error
}

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
	// Closed after the routers and the relays (deferred before them).
	obs, err := newObservability(ctx, o.Otel, o.OtelOut, b.outbox)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := obs.close(); cerr != nil {
			err = errors.Join(err, cerr)
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
	outbox, err := countOutbox(ctx, b.store, p.events)
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
	return s, nil
}
