// Package asynq is a stub of github.com/hibiken/asynq: only the names the
// checker reads.
package asynq

import (
	"context"
	"time"
)

// Task is a job.
type Task struct{}

// NewTask makes a task.
func NewTask(typename string, payload []byte, opts ...Option) *Task { return &Task{} }

// Option is an enqueue option.
type Option interface{}

// TaskID sets the task's id: a second enqueue of it fails.
func TaskID(id string) Option { return nil }

// Unique rejects a duplicate task for ttl.
func Unique(ttl time.Duration) Option { return nil }

// TaskInfo describes an enqueued task.
type TaskInfo struct{}

// Client enqueues tasks.
type Client struct{}

// Enqueue enqueues task.
func (c *Client) Enqueue(task *Task, opts ...Option) (*TaskInfo, error) { return nil, nil }

// EnqueueContext enqueues task.
func (c *Client) EnqueueContext(ctx context.Context, task *Task, opts ...Option) (*TaskInfo, error) {
	return nil, nil
}

// Payload is the task's payload.
func (t *Task) Payload() []byte { return nil }

// Handler processes a task: nil marks it done, an error retries it.
type Handler interface {
	ProcessTask(context.Context, *Task) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(context.Context, *Task) error

// ProcessTask calls f.
func (f HandlerFunc) ProcessTask(ctx context.Context, t *Task) error { return f(ctx, t) }

// ServeMux routes tasks by type.
type ServeMux struct{}

// NewServeMux makes a ServeMux.
func NewServeMux() *ServeMux { return &ServeMux{} }

// Handle registers handler for pattern.
func (mux *ServeMux) Handle(pattern string, handler Handler) {}

// HandleFunc registers handler for pattern.
func (mux *ServeMux) HandleFunc(pattern string, handler func(context.Context, *Task) error) {}

// ProcessTask dispatches t.
func (mux *ServeMux) ProcessTask(ctx context.Context, t *Task) error { return nil }

// MiddlewareFunc wraps a Handler.
type MiddlewareFunc func(Handler) Handler

// Use appends middlewares to the mux's chain.
func (mux *ServeMux) Use(mws ...MiddlewareFunc) {}

// RedisClientOpt says where Redis is.
type RedisClientOpt struct{ Addr string }

// Config configures a Server.
type Config struct{ Concurrency int }

// Server runs handlers.
type Server struct{}

// NewServer makes a Server.
func NewServer(r RedisClientOpt, cfg Config) *Server { return &Server{} }

// Run runs handler until a signal.
func (srv *Server) Run(handler Handler) error { return nil }

// Start starts handler.
func (srv *Server) Start(handler Handler) error { return nil }
