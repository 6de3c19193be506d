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
