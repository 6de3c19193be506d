// Package asynqsrv runs hibiken/asynq task handlers (field trial, wave 39:
// Zircon's video worker and go-zero-douyin's deferred publish): a handler's
// nil marks the task done, an error retries it.
package asynqsrv

import (
	"bytes"
	"context"
	"database/sql"
	"log"
	"net/http"

	"github.com/hibiken/asynq"
)

// Publisher inserts the video a deferred task names and returns a failure,
// so asynq retries it.
type Publisher struct{ DB *sql.DB }

// ProcessTask inserts the video.
func (p *Publisher) ProcessTask(ctx context.Context, t *asynq.Task) error {
	_, err := p.DB.ExecContext(ctx, "UPDATE videos SET published = true WHERE id = $1", string(t.Payload()))
	return err
}

// Serve registers a function and a Handler on a mux, and runs the mux.
func Serve(db *sql.DB) error {
	mux := asynq.NewServeMux()
	mux.HandleFunc("video:done", func(ctx context.Context, t *asynq.Task) error {
		if _, err := db.ExecContext(ctx, "UPDATE videos SET state = 'done' WHERE id = $1", string(t.Payload())); err != nil {
			log.Printf("video: %v", err)
		}
		return nil
	})
	mux.Handle("video:publish", &Publisher{DB: db})
	mux.Use(logged)
	mux.Handle("video:mail", newMailer(db))
	return asynq.NewServer(asynq.RedisClientOpt{Addr: "127.0.0.1:6379"}, asynq.Config{Concurrency: 4}).Run(mux)
}

// newMailer returns the mail task's handler as an asynq.HandlerFunc, a
// factory given to mux.Handle (field trial, wave 60: xu-shop's seven task
// handlers): the function it returns is the consumer.
func newMailer(db *sql.DB) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		_, err := db.ExecContext(ctx, "UPDATE videos SET mailed = true WHERE id = $1", string(t.Payload()))
		return err
	}
}

// logged is a middleware: the function it converts to asynq.HandlerFunc
// passes each task on to the handler it wraps, so it is no consumer of its
// own (field trial, wave 58: gqueue's AsynqLogger).
func logged(h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		log.Printf("task %s", t.Payload())
		return h.ProcessTask(ctx, t)
	})
}

// Archive runs one function as the server's only handler.
func Archive(db *sql.DB) error {
	return asynq.NewServer(asynq.RedisClientOpt{}, asynq.Config{}).Run(asynq.HandlerFunc(archive(db)))
}

func archive(db *sql.DB) func(context.Context, *asynq.Task) error {
	return func(ctx context.Context, t *asynq.Task) error {
		_, err := db.ExecContext(ctx, "UPDATE videos SET archived = true WHERE id = $1", string(t.Payload()))
		return err
	}
}

// Dispatcher posts webhooks in goroutines of its own (field trial, wave
// 41: posta's webhook dispatcher).
type Dispatcher struct{ URL string }

// Dispatch posts body in a goroutine and returns at once.
func (d *Dispatcher) Dispatch(body []byte) {
	go func() {
		_, _ = http.Post(d.URL, "application/json", bytes.NewReader(body))
	}()
}

// Hooks hands each task's webhook to the dispatcher and returns nil: asynq
// marks the task done before the webhook is posted.
func Hooks(d *Dispatcher) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	mux.HandleFunc("webhook", func(ctx context.Context, t *asynq.Task) error {
		d.Dispatch(t.Payload())
		return nil
	})
	return mux
}
