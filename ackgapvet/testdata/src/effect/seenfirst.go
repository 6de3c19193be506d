package effect

import (
	"context"
	"database/sql"
	"net/http"
	"strings"

	"github.com/segmentio/kafka-go"
)

func isDuplicateKey(err error) bool { return err != nil && strings.Contains(err.Error(), "23505") }

// notifyOnce records the source first and skips a redelivery on the unique
// key: the post after it is lost when it fails (checkact's finding), not
// repeated, so effect has nothing to say.
func notifyOnce(ctx context.Context, db *sql.DB, m kafka.Message) error {
	_, err := db.ExecContext(ctx, "INSERT INTO sources (name) VALUES ($1)", string(m.Value))
	if isDuplicateKey(err) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = http.Post("http://notify/sources", "text/plain", nil)
	return err
}

// notifyUnguarded posts with no record before it: repeated.
func notifyUnguarded(ctx context.Context, m kafka.Message) error {
	_, err := http.Post("http://notify/sources", "text/plain", nil) // want `an HTTP request \(http.Post\) on the consumer path of kafka-go reader loop runNotify`
	return err
}

func runNotify(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if notifyOnce(ctx, db, m) != nil || notifyUnguarded(ctx, m) != nil {
			return
		}
		r.CommitMessages(ctx, m)
	}
}
