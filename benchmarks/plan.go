package main

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
)

// event is one business event: an order placed, with the event id every
// copy of it carries.
type event struct {
	orderID string
	eventID string
	payload []byte
}

// plan is the message stream of one cell: the unique events (one pending
// order each) and, per message, the index of the event it carries. A
// duplicate carries an event that an earlier message carried too. Every
// workload of one duplicate rate gets the same plan, so they process the
// same messages.
type plan struct {
	events []event
	msgs   []int32
}

// dupWindow bounds how far back a duplicate reaches: copies arrive close
// to the original, often while it is still in flight on another
// partition (a concurrent duplicate), as after a lost ack or a lease that
// lapsed.
const dupWindow = 64

// newPlan returns a stream of n messages of which about dupRate are
// copies of an event carried by one of the dupWindow events before.
func newPlan(n int, dupRate float64, seed uint64) *plan {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	p := &plan{msgs: make([]int32, n)}
	unique := 0
	for i := range p.msgs {
		if unique > 0 && rng.Float64() < dupRate {
			lo := max(0, unique-dupWindow)
			p.msgs[i] = int32(lo + rng.IntN(unique-lo))
			continue
		}
		p.msgs[i] = int32(unique)
		unique++
	}
	p.events = make([]event, unique)
	for i := range p.events {
		id := "o" + strconv.Itoa(i)
		body, err := json.Marshal(orderPlaced{OrderID: id, AmountCents: int64(100 + i%9900), Email: id + "@example.com"})
		if err != nil {
			panic(err) // cannot fail for this struct
		}
		p.events[i] = event{orderID: id, eventID: "order.placed:" + id, payload: body}
	}
	return p
}

// orderIDs returns the ids of every order the plan's events move.
func (p *plan) orderIDs() []string {
	ids := make([]string, len(p.events))
	for i, e := range p.events {
		ids[i] = e.orderID
	}
	return ids
}

// distinct returns how many different events the first sent[p] messages
// of each partition p carried, messages being dealt to partitions round
// robin (message i to partition i mod len(sent)).
func (p *plan) distinct(sent []int) int {
	seen := make([]bool, len(p.events))
	n := 0
	c := len(sent)
	for part, k := range sent {
		for j := range k {
			e := p.msgs[part+j*c]
			if !seen[e] {
				seen[e] = true
				n++
			}
		}
	}
	return n
}
