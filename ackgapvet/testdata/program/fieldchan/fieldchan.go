// Package fieldchan hands each message from a receive loop to workers
// through a channel held in two struct fields of two types (field trial,
// wave 32: reservation-worker's poller and dispatcher), and through a
// worker pool's channel of `any` (Ads-service): both workers' effects are
// on the loop's path.
package fieldchan

import (
	"context"
	"database/sql"
	"net/http"
	"strings"

	"github.com/segmentio/kafka-go"
)

// Event is a decoded message.
type Event struct{ ID string }

// Dispatcher runs the handlers.
type Dispatcher struct{ events chan *Event }

// NewDispatcher makes the dispatcher and its channel.
func NewDispatcher() *Dispatcher { return &Dispatcher{events: make(chan *Event, 16)} }

func (d *Dispatcher) dispatch() {
	for ev := range d.events {
		_, _ = http.Post("http://billing.local/refund", "text/plain", strings.NewReader(ev.ID))
	}
}

// Poller receives and hands each event to the dispatcher.
type Poller struct {
	R      *kafka.Reader
	events chan *Event
}

// Run receives, hands off and commits.
func (p *Poller) Run(ctx context.Context) {
	for {
		m, err := p.R.FetchMessage(ctx)
		if err != nil {
			return
		}
		p.events <- &Event{ID: string(m.Value)}
		_ = p.R.CommitMessages(ctx, m)
	}
}

// Start wires the poller to the dispatcher's channel.
func Start(ctx context.Context, r *kafka.Reader) {
	d := NewDispatcher()
	p := &Poller{R: r, events: d.events}
	go d.dispatch()
	p.Run(ctx)
}

// Pool runs tasks of any type.
type Pool struct {
	tasks   chan interface{}
	process func(context.Context, interface{})
}

// Submit queues a task.
func (p *Pool) Submit(t interface{}) { p.tasks <- t }

func (p *Pool) start(ctx context.Context) {
	for range 4 {
		go func() {
			for t := range p.tasks {
				p.process(ctx, t)
			}
		}()
	}
}

// Ads consumes impressions through the pool.
type Ads struct {
	R    *kafka.Reader
	DB   *sql.DB
	pool *Pool
}

func (a *Ads) record(ctx context.Context, t interface{}) {
	m := t.(kafka.Message)
	_, _ = a.DB.ExecContext(ctx, "UPDATE ads SET impressions = impressions + 1 WHERE id = $1", string(m.Value))
}

// NewAds makes the consumer and starts its pool.
func NewAds(ctx context.Context, r *kafka.Reader, db *sql.DB) *Ads {
	a := &Ads{R: r, DB: db}
	a.pool = &Pool{tasks: make(chan interface{}, 64), process: a.record}
	a.pool.start(ctx)
	return a
}

// Run receives, submits and commits.
func (a *Ads) Run(ctx context.Context) {
	for {
		m, err := a.R.FetchMessage(ctx)
		if err != nil {
			return
		}
		a.pool.Submit(m)
		_ = a.R.CommitMessages(ctx, m)
	}
}

// Sink posts what it receives.
type Sink struct{ in chan *Event }

// In returns the sink's channel.
func (s *Sink) In() chan *Event { return s.in }

func (s *Sink) drain() {
	for ev := range s.in {
		_, _ = http.Post("http://audit.local/events", "text/plain", strings.NewReader(ev.ID))
	}
}

// Relay receives and hands each event to the channel it was made with.
type Relay struct {
	R   *kafka.Reader
	out chan *Event
}

// NewRelay makes a relay that hands off to out.
func NewRelay(r *kafka.Reader, out chan *Event) *Relay { return &Relay{R: r, out: out} }

// Run receives, hands off and commits.
func (rl *Relay) Run(ctx context.Context) {
	for {
		m, err := rl.R.FetchMessage(ctx)
		if err != nil {
			return
		}
		rl.out <- &Event{ID: string(m.Value)}
		_ = rl.R.CommitMessages(ctx, m)
	}
}

// StartRelay wires a relay to a sink through the sink's getter.
func StartRelay(ctx context.Context, r *kafka.Reader) {
	s := &Sink{in: make(chan *Event, 8)}
	go s.drain()
	NewRelay(r, s.In()).Run(ctx)
}
