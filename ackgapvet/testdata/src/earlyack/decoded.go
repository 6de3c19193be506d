package earlyack

import (
	"context"
	"database/sql"
	"encoding/json"
	"log"
	"time"

	"github.com/segmentio/kafka-go"
)

// click is what the loop hands on: decoded from the message, not the
// message itself.
type click struct{ Code string }

// forwardDecoded sends the decoded event from the else branch of the
// decode, then commits (wave 14, go_url-shortener H1).
func forwardDecoded(ctx context.Context, r *kafka.Reader, out chan<- click) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		var ev click
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			log.Printf("bad click: %v", err)
		} else {
			out <- ev
		}
		_ = r.CommitMessages(ctx, m) // want `acks with kafka.Reader.CommitMessages while the message's work runs in another goroutine \(a send on out at line \d+\)`
	}
}

// countOnly sends a number that says nothing of the message: clean.
func countOnly(ctx context.Context, r *kafka.Reader, seen chan<- int) {
	n := 0
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		n++
		seen <- n
		_ = r.CommitMessages(ctx, m)
	}
}

// commitUntilDone retries the commit until it succeeds, then writes
// (wave 18, distributed-faas H3): the loop is the ack, before the work.
func commitUntilDone(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		for {
			if err := r.CommitMessages(ctx, m); err != nil { // want `acks with kafka.Reader.CommitMessages before the work`
				time.Sleep(time.Second)
				continue
			}
			break
		}
		_, _ = db.ExecContext(ctx, "INSERT INTO totals (v) VALUES ($1)", m.Value)
	}
}

// commitWhenConfigured commits first when the configuration says so
// (wave 19, skripsi H1: if c.autoCommit { session.MarkMessage(msg, "") }).
func commitWhenConfigured(ctx context.Context, r *kafka.Reader, db *sql.DB, early bool) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if early {
			_ = r.CommitMessages(ctx, m) // want `acks with kafka.Reader.CommitMessages before the work`
		}
		_, _ = db.ExecContext(ctx, "INSERT INTO totals (v) VALUES ($1)", m.Value)
	}
}
