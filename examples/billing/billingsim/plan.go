package billingsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/ackgap/ackgap/examples/billing/orders"
)

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
		if err := t.waitUntil(ctx, func() bool { e := t.events[ev.id]; return e.passes() >= 2 }); err != nil {
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
