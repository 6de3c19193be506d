// Package kworker holds the loops over kqueue's one-shot receive.
package kworker

import (
	"bytes"
	"context"
	"net/http"

	"example.com/program/kqueue"
)

// Worker processes tasks.
type Worker struct {
	Q *kqueue.Queue
	C *http.Client
}

// Run is the consumer: the receive wrapper is called in its loop.
func (w *Worker) Run(ctx context.Context) {
	for {
		m := w.Q.Receive(ctx)
		if m == nil {
			continue
		}
		w.process(ctx, m.Value)
		_ = w.Q.Commit(ctx, m)
	}
}

func (w *Worker) process(ctx context.Context, v []byte) {
	_, _ = w.C.Post("https://alerts.example.com/notify", "application/json", bytes.NewReader(v))
}
