// Package redispop pops tasks through the code's own queue interface in a
// loop: the loop is a Redis queue consumer, and the BRPOP in the queue's
// Pop takes each task off the list before its write (field trial, wave 43:
// go-store's image worker). Its twin moves tasks into a processing list
// and removes them after the write.
package redispop

import (
	"context"
	"database/sql"
	"log"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"example.com/program/redispop/queue"
)

// Worker applies image tasks.
type Worker struct {
	Q  queue.Queue
	DB *sql.DB
}

// Run starts n loops and waits for them.
func (w *Worker) Run(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Loop(ctx)
		}()
	}
	wg.Wait()
}

// Loop pops and applies tasks until ctx ends.
func (w *Worker) Loop(ctx context.Context) {
	for ctx.Err() == nil {
		p, err := w.Q.Pop(ctx, "images")
		if err != nil {
			continue
		}
		if _, err := w.DB.ExecContext(ctx, "INSERT INTO images (url) VALUES ($1)", string(p)); err != nil {
			log.Print(err)
		}
	}
}

// ReliableWorker applies tasks taken into a processing list.
type ReliableWorker struct {
	Q  *queue.Reliable
	DB *sql.DB
}

// Loop moves, applies and removes tasks until ctx ends.
func (w *ReliableWorker) Loop(ctx context.Context) {
	for ctx.Err() == nil {
		p, err := w.Q.Pop(ctx, "images")
		if err != nil {
			continue
		}
		if _, err := w.DB.ExecContext(ctx, "UPDATE images SET seen = true WHERE url = $1", string(p)); err != nil {
			continue
		}
		if err := w.Q.Done(ctx, "images", p); err != nil {
			log.Print(err)
		}
	}
}

// Feeder pushes a task for every product message: its walk reaches the
// worker's loop through the channel queue's Pop, and the loop is a
// consumer all the same.
type Feeder struct{ Q queue.Queue }

// Handle is a Lambda SQS handler.
func (f *Feeder) Handle(ctx context.Context, ev events.SQSEvent) error {
	for _, r := range ev.Records {
		if err := f.Q.Push(ctx, "images", []byte(r.Body)); err != nil {
			return err
		}
	}
	return nil
}
