// Package kwrap reads and commits through the code's own wrappers in
// another package (field trial, wave 21: player-history-fetcher's
// kafka.ReadPlayerPayload and kafka.CommitPlayerPayload): a failed
// message the loop passes over is committed past by the next commit.
package kwrap

import (
	"database/sql"
	"log"

	"example.com/program/kwrap/queue"
)

// Ingest fetches, records and commits.
func Ingest(db *sql.DB) {
	for {
		m, err := queue.Read()
		if err != nil {
			continue // no message in hand
		}
		if _, err := db.Exec("UPDATE players SET fetched = now() WHERE id = $1", string(m.Value)); err != nil {
			log.Printf("record: %v", err)
			continue
		}
		if err := queue.Commit(m); err != nil {
			log.Printf("commit: %v", err) // a failed commit: the message comes again
		}
	}
}

// IngestJobs fetches through a function that decodes (its failure has no
// message in hand) and skips a failed job, which the next Done commits
// past.
func IngestJobs(db *sql.DB) {
	for {
		j, err := queue.ReadJob()
		if err != nil {
			continue
		}
		if _, err := db.Exec("UPDATE jobs SET done = true WHERE id = $1", j.ID); err != nil {
			continue
		}
		_ = queue.Done()
	}
}

// fetchBatch gathers up to ten messages through the wrapper: a batch
// collector, not the consumer (field trial, waves 23 and 24: webhook
// delivery's fetchBatchMessages under Worker.Run).
func fetchBatch() ([]queue.Msg, error) {
	var b []queue.Msg
	for len(b) < 10 {
		m, err := queue.Read()
		if err != nil {
			break
		}
		b = append(b, m)
	}
	return b, nil
}

// Deliver posts each batch and commits it; a failed batch is skipped, and
// the next batch's commit passes over it.
func Deliver(db *sql.DB) {
	for {
		b, err := fetchBatch()
		if err != nil || len(b) == 0 {
			continue
		}
		if _, err := db.Exec("UPDATE deliveries SET sent = true WHERE id = $1", string(b[0].Value)); err != nil {
			continue
		}
		_ = queue.Commit(b[len(b)-1])
	}
}
