// Package gen: a consumer loop inside a generator (a function that makes a
// channel, sends on it from a goroutine and returns it); the records are
// handled where the returned channel is read.
package gen

import (
	"bytes"
	"context"
	"net/http"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
)

// Event is what the store emits.
type Event interface{}

// Store reads schedules.
type Store struct{ r *kafka.Reader }

// Events returns the channel the poll loop feeds.
func (s *Store) Events(ctx context.Context) <-chan Event {
	out := make(chan Event)
	go func() {
		for {
			m, err := s.r.ReadMessage(ctx)
			if err != nil {
				return
			}
			out <- m.Value
		}
	}()
	return out
}

// Scheduler fires what the store emits.
type Scheduler struct{ C *http.Client }

// Run reads the store's channel.
func (sc *Scheduler) Run(ctx context.Context, s *Store) {
	for ev := range s.Events(ctx) {
		b, _ := ev.([]byte)
		_, _ = sc.C.Post("https://target.example.com/fire", "application/json", bytes.NewReader(b))
	}
}

// Job is a unit of work for the pool.
type Job struct{ Body []byte }

// Pool reads a channel of jobs in workers started by errgroup.
type Pool struct {
	Jobs chan Job
	C    *http.Client
}

// Start starts the workers through errgroup.
func (p *Pool) Start(g *errgroup.Group) {
	for range 4 {
		g.Go(func() error {
			for j := range p.Jobs {
				_, _ = p.C.Post("https://sms.example.com/send", "text/plain", bytes.NewReader(j.Body))
			}
			return nil
		})
	}
}

// Consume is the consumer loop that hands jobs to the pool.
func (p *Pool) Consume(ctx context.Context, r *kafka.Reader) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		p.Jobs <- Job{Body: m.Value}
		_ = r.CommitMessages(ctx, m)
	}
}
