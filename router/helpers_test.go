package router_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ackgap/ackgap"
)

// observed records inbox outcomes and reads the dead-letter topic, for
// tests that run a router.
type observed struct {
	dlq  <-chan *message.Message
	mu   sync.Mutex
	seen []ackgap.Outcome
	ch   chan struct{}
}

func newObserved() *observed { return &observed{ch: make(chan struct{}, 100)} }

// observe is a middleware.ObserverFunc.
func (o *observed) observe(_ context.Context, r *ackgap.InboxReport) {
	o.mu.Lock()
	o.seen = append(o.seen, r.Outcome)
	o.mu.Unlock()
	o.ch <- struct{}{}
}

// wait returns the outcomes once there are at least n, failing after 10 s.
func (o *observed) wait(t *testing.T, n int) []ackgap.Outcome {
	t.Helper()
	for {
		o.mu.Lock()
		got := append([]ackgap.Outcome(nil), o.seen...)
		o.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-o.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("waited for %d deliveries, saw %v", n, got)
		}
	}
}

// deadLetter returns the next dead-lettered message, failing after 10 s.
func (o *observed) deadLetter(t *testing.T) *message.Message {
	t.Helper()
	select {
	case m := <-o.dlq:
		m.Ack()
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reached the dead-letter topic")
		return nil
	}
}
