// Package seenfirst records a source with a unique key, takes the key's
// violation for "seen" and skips, then notifies through an interface
// (field trial, wave 31: vulnerability-db's ProcessSourceExecution before
// its SNS notifications): a failed notification's redelivery is skipped,
// and the notification is never sent.
package seenfirst

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"

	"github.com/segmentio/kafka-go"
)

// Notifier sends a finding's notification.
type Notifier interface {
	Push(ctx context.Context, body string) error
}

// HTTPNotifier posts notifications.
type HTTPNotifier struct{ URL string }

// Push posts body.
func (h HTTPNotifier) Push(ctx context.Context, body string) error {
	resp, err := http.Post(h.URL, "text/plain", strings.NewReader(body))
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Store records sources.
type Store struct{ DB *sql.DB }

// Save inserts the source; a second one fails on the unique key.
func (s Store) Save(ctx context.Context, src string) error {
	_, err := s.DB.ExecContext(ctx, "INSERT INTO sources (name) VALUES ($1)", src)
	return err
}

// IsDuplicateErr reports a unique-key violation.
func IsDuplicateErr(err error) bool { return strings.Contains(err.Error(), "duplicate key") }

// Processor handles checks.
type Processor struct {
	Store    Store
	Notifier Notifier
}

// Process records the source, then notifies.
func (p *Processor) Process(ctx context.Context, body string) error {
	err := p.Store.Save(ctx, body)
	if err != nil {
		if IsDuplicateErr(err) {
			return nil
		}
		return err
	}
	return p.Notifier.Push(ctx, body)
}

// ProcessAfter notifies first and records after: nothing is lost.
func (p *Processor) ProcessAfter(ctx context.Context, body string) error {
	if err := p.Notifier.Push(ctx, body); err != nil {
		return err
	}
	if err := p.Store.Save(ctx, body); err != nil {
		if errors.Is(err, sql.ErrNoRows) || IsDuplicateErr(err) {
			return nil
		}
		return err
	}
	return nil
}

// Run consumes checks.
func Run(ctx context.Context, r *kafka.Reader, p *Processor) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if p.Process(ctx, string(m.Value)) != nil || p.ProcessAfter(ctx, string(m.Value)) != nil {
			return
		}
		r.CommitMessages(ctx, m)
	}
}
