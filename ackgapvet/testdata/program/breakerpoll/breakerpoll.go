// Package breakerpoll polls the job queue from a ticker loop through a
// circuit breaker's callback: the loop is the consumer, and the work below
// it (an HTTP call whose failure is only logged before the delete) is on
// its path (field trial, wave 43: Messanger's pollAndProcess).
package breakerpoll

import (
	"context"
	"errors"
	"log"
	"net/http"
	"time"

	"example.com/program/breakerpoll/jobq"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
)

var errOpen = errors.New("circuit open")

// Breaker stops calling after three failures in a row.
type Breaker struct{ failures int }

// Execute calls fn unless the breaker is open.
func (b *Breaker) Execute(ctx context.Context, fn func(context.Context) error) error {
	if b.failures > 3 {
		return errOpen
	}
	if err := fn(ctx); err != nil {
		b.failures++
		return err
	}
	b.failures = 0
	return nil
}

// Worker polls and reports.
type Worker struct {
	Q       *jobq.Queue
	B       *Breaker
	Metrics *cloudwatch.Client
}

// Run polls every second and flushes metrics every minute.
func (w *Worker) Run(ctx context.Context) {
	poll, flush := time.NewTicker(time.Second), time.NewTicker(time.Minute)
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			w.poll(ctx)
		case <-flush.C:
			if _, err := w.Metrics.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{}); err != nil {
				log.Print(err)
			}
		}
	}
}

func (w *Worker) poll(ctx context.Context) {
	var jobs []jobq.Job
	var handles []string
	err := w.B.Execute(ctx, func(ctx context.Context) error {
		var err error
		jobs, handles, err = w.Q.Receive(ctx)
		return err
	})
	if err != nil {
		return
	}
	for i, j := range jobs {
		w.process(ctx, j, handles[i])
	}
}

func (w *Worker) process(ctx context.Context, j jobq.Job, handle string) {
	if _, err := http.Post(j.URL, "application/json", nil); err != nil {
		log.Print(err)
	}
	if err := w.Q.Delete(ctx, handle); err != nil {
		log.Print(err)
	}
}

// RunEarly deletes each job through the queue package's wrapper before it
// posts it: the delete is the ack, before the work (field trial, wave 46:
// video-transcoder's DeleteMessage before RunTask).
func (w *Worker) RunEarly(ctx context.Context) {
	for ctx.Err() == nil {
		jobs, handles, err := w.Q.Receive(ctx)
		if err != nil {
			continue
		}
		for i, j := range jobs {
			if err := w.Q.Delete(ctx, handles[i]); err != nil {
				continue
			}
			if _, err := http.Post(j.URL, "application/json", nil); err != nil {
				log.Print(err)
			}
		}
	}
}

// RunDeferred hands each job to a function that deletes it in a deferred
// call: on every return in handleDeferred, only on a recovered panic in
// handleGuarded (field trial, wave 47: fyredocs' recover-only defers).
func (w *Worker) RunDeferred(ctx context.Context) {
	for ctx.Err() == nil {
		jobs, handles, err := w.Q.Receive(ctx)
		if err != nil {
			continue
		}
		for i, j := range jobs {
			if i%2 == 0 {
				w.handleDeferred(ctx, j, handles[i])
			} else {
				w.handleGuarded(ctx, j, handles[i])
			}
		}
	}
}

func (w *Worker) handleDeferred(ctx context.Context, j jobq.Job, handle string) {
	defer func() {
		_ = w.Q.Delete(ctx, handle)
	}()
	if _, err := http.Post(j.URL, "application/json", nil); err != nil {
		log.Print(err)
	}
}

func (w *Worker) handleGuarded(ctx context.Context, j jobq.Job, handle string) {
	defer func() {
		if r := recover(); r != nil {
			log.Print(r)
			_ = w.Q.Delete(ctx, handle)
		}
	}()
	if _, err := http.Post(j.URL, "application/json", nil); err != nil {
		log.Print(err)
		return
	}
	_ = w.Q.Delete(ctx, handle)
}
