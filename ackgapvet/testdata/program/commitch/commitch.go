// Package commitch hands each fetched message to a pipeline over a channel
// and commits it once the pipeline closes the message's commit channel
// (field trial, wave 37: kubev2v/migration-event-streamer's router).
package commitch

import (
	"bytes"
	"context"
	"encoding/json"
	"log"
	"net/http"

	"github.com/segmentio/kafka-go"
)

// Message is a fetched event and the channel its handler closes when the
// event may be committed.
type Message struct {
	Value    []byte
	CommitCh chan struct{}
}

// Consumer fetches from one consumer group.
type Consumer struct{ r *kafka.Reader }

// Consume sends each message on messages and commits it once its CommitCh
// is closed.
func (c *Consumer) Consume(ctx context.Context, messages chan Message) error {
	go func() {
		defer close(messages)
		for {
			m, err := c.r.FetchMessage(ctx)
			if err != nil {
				return
			}
			msg := Message{Value: m.Value, CommitCh: make(chan struct{})}
			messages <- msg
			select {
			case <-msg.CommitCh:
			case <-ctx.Done():
				return
			}
			_ = c.r.CommitMessages(ctx, m)
		}
	}()
	return nil
}

// Router forwards each message to a webhook.
type Router struct {
	input chan Message
	c     *http.Client
}

// NewRouter returns a router reading input.
func NewRouter(input chan Message, c *http.Client) *Router { return &Router{input: input, c: c} }

// Start routes until ctx ends; a failed post is logged and the message is
// released for commit all the same (a body that does not encode is
// released on purpose).
func (r *Router) Start(ctx context.Context) {
	go func() {
		for {
			select {
			case msg, ok := <-r.input:
				if !ok {
					return
				}
				body, err := json.Marshal(string(msg.Value))
				if err != nil { // permanent: not a lost message
					close(msg.CommitCh)
					continue
				}
				resp, err := r.c.Post("https://hooks.example/route", "application/json", bytes.NewReader(body))
				if err != nil {
					log.Printf("route: %v", err)
					close(msg.CommitCh)
					continue
				}
				resp.Body.Close()
				close(msg.CommitCh)
			case <-ctx.Done():
				return
			}
		}
	}()
}

// Job is a dispatched payload and the channel its pipeline closes when it
// is done with it.
type Job struct {
	Data []byte
	Done chan struct{}
}

// Dispatcher hands each message to a pipeline and releases the message
// for commit once the pipeline is done with it.
type Dispatcher struct {
	input chan Message
	jobs  chan Job
}

// NewDispatcher returns a dispatcher from input to jobs.
func NewDispatcher(input chan Message, jobs chan Job) *Dispatcher {
	return &Dispatcher{input: input, jobs: jobs}
}

// Start dispatches until the input closes.
func (d *Dispatcher) Start() {
	go func() {
		for msg := range d.input {
			job := Job{Data: msg.Value, Done: make(chan struct{})}
			d.jobs <- job
			<-job.Done
			close(msg.CommitCh)
		}
	}()
}

// Pipeline stores each job's payload; a failed store is logged, and the
// job is done all the same.
type Pipeline struct {
	jobs chan Job
	c    *http.Client
}

// NewPipeline returns a pipeline of jobs: its channel is the dispatcher's,
// passed to both constructors.
func NewPipeline(jobs chan Job, c *http.Client) *Pipeline { return &Pipeline{jobs: jobs, c: c} }

// Start runs the pipeline until its jobs close.
func (p *Pipeline) Start() {
	go func() {
		for job := range p.jobs {
			if err := p.store(job.Data); err != nil {
				log.Printf("store: %v", err)
			}
			close(job.Done)
		}
	}()
}

func (p *Pipeline) store(b []byte) error {
	resp, err := p.c.Post("https://store.example/docs", "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Retrier forwards each message and releases it only once the post
// succeeded, retrying a failure.
type Retrier struct {
	input chan Message
	c     *http.Client
}

// Start retries each post until it succeeds.
func (r *Retrier) Start() {
	go func() {
		for msg := range r.input {
			for {
				resp, err := r.c.Post("https://hooks.example/retry", "application/json", bytes.NewReader(msg.Value))
				if err != nil {
					log.Printf("retry: %v", err)
					continue
				}
				resp.Body.Close()
				break
			}
			close(msg.CommitCh)
		}
	}()
}

// Source is what the manager consumes from.
type Source interface {
	Consume(ctx context.Context, messages chan Message) error
}

// Run wires a source to a router.
func Run(ctx context.Context, src Source, c *http.Client) error {
	ch := make(chan Message)
	r := NewRouter(ch, c)
	if err := src.Consume(ctx, ch); err != nil {
		return err
	}
	r.Start(ctx)
	return nil
}

// RunPipeline wires a source to a dispatcher and its pipeline.
func RunPipeline(ctx context.Context, src Source, c *http.Client) error {
	ch, jobs := make(chan Message), make(chan Job)
	d, p := NewDispatcher(ch, jobs), NewPipeline(jobs, c)
	if err := src.Consume(ctx, ch); err != nil {
		return err
	}
	p.Start()
	d.Start()
	return nil
}

// RunRetrier wires a source to a retrier.
func RunRetrier(ctx context.Context, src Source, c *http.Client) error {
	ch := make(chan Message)
	r := &Retrier{input: ch, c: c}
	if err := src.Consume(ctx, ch); err != nil {
		return err
	}
	r.Start()
	return nil
}

// Main wires the kafka-go consumer.
func Main(ctx context.Context) error {
	return Run(ctx, &Consumer{r: kafka.NewReader(kafka.ReaderConfig{GroupID: "router", Topic: "events"})}, http.DefaultClient)
}
