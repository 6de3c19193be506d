package checkact

import (
	"bytes"
	"context"
	"database/sql"
	"log"
	"net/http"
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
	if _, err := db.ExecContext(ctx, "INSERT INTO connections (client_id, message_id) VALUES ($1, $2) ON CONFLICT (client_id) DO UPDATE SET message_id = $2", string(m.Value), string(m.Value[:8])); err != nil { // want `writes the record that a redelivery is skipped on \(line 21\) before an HTTP request`
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
