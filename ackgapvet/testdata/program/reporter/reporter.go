// Package reporter writes a job's progress from a goroutine while the job
// runs, and stops and waits for it before the ack (field trial, wave 47:
// fyredocs' progress reporter). The twin acks while its goroutine still
// sends the job's result.
package reporter

import (
	"context"
	"database/sql"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

type progress struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// start writes the job's progress every second until stopped.
func start(db *sql.DB, id string) *progress {
	ctx, cancel := context.WithCancel(context.Background())
	p := &progress{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_, _ = db.Exec("UPDATE jobs SET progress = progress + 1 WHERE id = $1", id)
			}
		}
	}()
	return p
}

// stop cancels the goroutine and waits for it.
func (p *progress) stop() {
	p.cancel()
	<-p.done
}

// send posts the job's result in the background.
func send(db *sql.DB, id string) {
	go func() {
		_, _ = db.Exec("INSERT INTO results (job_id) VALUES ($1)", id)
	}()
}

// Run consumes jobs.
func Run(cons jetstream.Consumer, db *sql.DB) error {
	_, err := cons.Consume(func(m jetstream.Msg) {
		id := string(m.Data())
		p := start(db, id)
		if _, err := db.Exec("UPDATE jobs SET done = true WHERE id = $1", id); err != nil {
			p.stop()
			_ = m.Nak()
			return
		}
		p.stop()
		_ = m.Ack()
	})
	if err != nil {
		return err
	}
	_, err = cons.Consume(func(m jetstream.Msg) {
		send(db, string(m.Data()))
		_ = m.Ack()
	})
	return err
}
