// Package latecheck checks a failed write's error a few statements after
// the call (wave 16, ccx-notification-writer's HandleMessage): the loop
// commits after the handler whatever happened.
package latecheck

import (
	"context"
	"database/sql"
	"log"
	"time"

	"github.com/segmentio/kafka-go"
)

// Writer stores reports.
type Writer struct {
	R  *kafka.Reader
	DB *sql.DB
}

// Run commits every message after HandleMessage, which returns nothing.
func (w *Writer) Run(ctx context.Context) {
	for {
		m, err := w.R.FetchMessage(ctx)
		if err != nil {
			return
		}
		w.HandleMessage(m)
		w.HandleTimed(m)
		if err := w.R.CommitMessages(ctx, m); err != nil {
			return
		}
	}
}

// HandleMessage times the write, logs, and only then reads its error.
func (w *Writer) HandleMessage(m kafka.Message) {
	start := time.Now()
	_, err := w.DB.Exec("INSERT INTO reports (body) VALUES ($1) ON CONFLICT DO NOTHING", m.Value)
	elapsed := time.Since(start)
	log.Printf("processed in %s", elapsed)
	if err != nil {
		log.Printf("store report: %v", err)
	}
}

// HandleTimed sets err inside a timing closure, then reads it: the check
// is the closure's call's, not the earlier write's (wave 17, flyte's
// CreateDuration.Time).
func (w *Writer) HandleTimed(m kafka.Message) {
	_, err := w.DB.Exec("INSERT INTO reports (body) VALUES ($1) ON CONFLICT DO NOTHING", m.Value)
	if err != nil {
		return
	}
	timed(func() {
		_, err = w.lookup(m)
	})
	if err != nil {
		log.Printf("lookup: %v", err)
	}
}

func timed(f func()) { f() }

func (w *Writer) lookup(m kafka.Message) (int, error) { return len(m.Value), nil }
