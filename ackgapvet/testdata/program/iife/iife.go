// Package iife: the receive sits in a function literal called where it is
// written (a scope for a timeout's defer); the loop, the work and the
// commit are the enclosing method's (wave 17, tempo's block-builder:
// func() kgo.Fetches { ...; return cl.PollFetches(ctx) }()).
package iife

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/segmentio/kafka-go"
)

// Worker posts each message's body.
type Worker struct {
	R *kafka.Reader
	C *http.Client
}

// Run fetches under a per-fetch timeout, posts, then commits.
func (w *Worker) Run(ctx context.Context) {
	for {
		m, err := func() (kafka.Message, error) {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return w.R.FetchMessage(ctx)
		}()
		if err != nil {
			continue
		}
		if _, err := w.C.Post("https://hooks.example.com/in", "application/json", bytes.NewReader(m.Value)); err != nil {
			continue
		}
		_ = w.R.CommitMessages(ctx, m)
	}
}
