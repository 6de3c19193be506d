package checkact

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

var client = &http.Client{Timeout: 10 * time.Second}

// markFirst writes the record a redelivery is skipped on before the call
// it guards (field trial wave 4, cloud-connector H1).
func markFirst(ctx context.Context, db *sql.DB, m kafka.Message) error {
	var last string
	db.QueryRowContext(ctx, "SELECT message_id FROM connections WHERE client_id = $1", string(m.Value)).Scan(&last)
	if last == string(m.Value[:8]) {
		return nil // "duplicate": skipped and committed
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO connections (client_id, message_id) VALUES ($1, $2) ON CONFLICT (client_id) DO UPDATE SET message_id = $2", string(m.Value), string(m.Value[:8])); err != nil { // want `writes the record that a redelivery is skipped on \(line 23\) before an HTTP request`
		return err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://sources/bulk_create", bytes.NewReader(m.Value))
	req.Header.Set("Idempotency-Key", string(m.Value))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// markAfter makes the call first and writes the record after it: a crash
// between them repeats a call that carries a key, nothing is lost.
func markAfter(ctx context.Context, db *sql.DB, m kafka.Message) error {
	var last string
	db.QueryRowContext(ctx, "SELECT message_id FROM connections WHERE client_id = $1", string(m.Value)).Scan(&last)
	if last == string(m.Value[:8]) {
		return nil
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://sources/bulk_create", bytes.NewReader(m.Value))
	req.Header.Set("Idempotency-Key", string(m.Value))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	_, err = db.ExecContext(ctx, "INSERT INTO connections (client_id, message_id) VALUES ($1, $2) ON CONFLICT (client_id) DO UPDATE SET message_id = $2", string(m.Value), string(m.Value[:8]))
	return err
}

// errorSkip returns nil on a failed read: error handling, not a skip on a
// record (errack's business, not this rule's).
func errorSkip(ctx context.Context, db *sql.DB, m kafka.Message) error {
	n, err := db.QueryContext(ctx, "SELECT 1 FROM connections WHERE client_id = $1", string(m.Value))
	if err != nil {
		log.Println(err)
		return nil
	}
	n.Close()
	if _, err := db.ExecContext(ctx, "UPDATE connections SET seen = now() WHERE client_id = $1", string(m.Value)); err != nil {
		return err
	}
	_, err = client.Post("http://sources/ping", "text/plain", nil)
	return err
}

func runMarks(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if markFirst(ctx, db, m) != nil || markAfter(ctx, db, m) != nil || errorSkip(ctx, db, m) != nil {
			return
		}
		r.CommitMessages(ctx, m)
	}
}

// ErrAlreadyExists is what insertSource returns on the unique key.
var ErrAlreadyExists = errors.New("already exists")

func isDuplicate(err error) bool { return err != nil && strings.Contains(err.Error(), "23505") }

// insertSource records the source; a second one fails on the unique key.
func insertSource(ctx context.Context, db *sql.DB, name string) error {
	if _, err := db.ExecContext(ctx, "INSERT INTO sources (name) VALUES ($1)", name); err != nil {
		if isDuplicate(err) {
			return ErrAlreadyExists
		}
		return err
	}
	return nil
}

// seenFlat takes the insert's unique-key failure for "seen" in a flat
// test, then makes the call the insert guards: a failed call's
// redelivery is skipped.
func seenFlat(ctx context.Context, db *sql.DB, m kafka.Message) error {
	name := string(m.Value)
	_, err := db.ExecContext(ctx, "INSERT INTO sources (name) VALUES ($1)", name) // want `writes the record that a redelivery is skipped on \(line \d+\) before an HTTP request`
	if isDuplicate(err) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = client.Post("http://notify/sources", "text/plain", nil)
	return err
}

// seenSentinel does the same through the code's own insert, which maps
// the violation to a sentinel error.
func seenSentinel(ctx context.Context, db *sql.DB, m kafka.Message) error {
	if err := insertSource(ctx, db, string(m.Value)); errors.Is(err, ErrAlreadyExists) { // want `writes the record that a redelivery is skipped on \(line \d+\) before an HTTP request`
		return nil
	} else if err != nil {
		return err
	}
	_, err := client.Post("http://notify/sources", "text/plain", nil)
	return err
}

// seenAfterCall makes the call first: clean.
func seenAfterCall(ctx context.Context, db *sql.DB, m kafka.Message) error {
	if _, err := client.Post("http://notify/sources", "text/plain", nil); err != nil {
		return err
	}
	if err := insertSource(ctx, db, string(m.Value)); errors.Is(err, ErrAlreadyExists) {
		return nil
	} else if err != nil {
		return err
	}
	return nil
}

func runSeen(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if seenFlat(ctx, db, m) != nil || seenSentinel(ctx, db, m) != nil || seenAfterCall(ctx, db, m) != nil {
			return
		}
		r.CommitMessages(ctx, m)
	}
}
