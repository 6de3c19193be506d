// Package swallow: failed writes turned into a nil return below a kafka-go
// loop that commits when its processing function returns nil (field trial
// wave 4, cloud-connector H2 and H3).
package swallow

import (
	"context"
	"database/sql"
	"errors"
	"log"

	"github.com/segmentio/kafka-go"
)

// Consume commits a message when process returns nil and stops, without
// committing, when it fails.
func Consume(ctx context.Context, r *kafka.Reader, process func(*kafka.Message) error) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := process(&m); err != nil {
			return // stop without committing
		}
		r.CommitMessages(ctx, m)
	}
}

// FatalError is an error the processor wants to stop on.
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return e.Err.Error() }

func register(ctx context.Context, db *sql.DB, key string) error {
	_, err := db.ExecContext(ctx, "INSERT INTO connections (client_id) VALUES ($1) ON CONFLICT (client_id) DO NOTHING", key)
	return err
}

func online(ctx context.Context, db *sql.DB, key string) error {
	if err := register(ctx, db, key); err != nil {
		var fatal *FatalError
		if errors.As(err, &fatal) {
			return err
		}
		log.Println(err)
		return nil // want: the loop commits a failed registration
	}
	return nil
}

func dispatch(ctx context.Context, db *sql.DB, m *kafka.Message) error {
	return online(ctx, db, string(m.Value))
}

// MakeProcess returns the loop's processor: a closure whose parameter is
// named, the loop's parameter type not.
func MakeProcess(db *sql.DB) func(msg *kafka.Message) error {
	return func(msg *kafka.Message) error {
		if len(msg.Value) == 0 {
			return nil // nothing to do: not a failed write
		}
		if err := dispatch(context.Background(), db, msg); err != nil {
			return err
		}
		return audit(db, msg)
	}
}

// audit's failure is returned: the loop stops without committing.
func audit(db *sql.DB, m *kafka.Message) error {
	if _, err := db.Exec("INSERT INTO audit (v) VALUES ($1)", m.Value); err != nil {
		return err
	}
	return nil
}

// Background's writes run in a goroutine: its result is nobody's, and its
// nil is not an ack.
func Background(db *sql.DB, m *kafka.Message) {
	go func() {
		if _, err := db.Exec("INSERT INTO seen (v) VALUES ($1)", m.Value); err != nil {
			log.Println(err)
			return
		}
	}()
}

// Purchases handles a message and returns nothing: its failures are its
// own (field trial wave 5, GCStatus H1).
type Purchases struct{ DB *sql.DB }

// Handle logs a failed write and returns.
func (p *Purchases) Handle(m kafka.Message) {
	if _, err := p.DB.Exec("INSERT INTO purchases (v) VALUES ($1)", m.Value); err != nil {
		log.Println(err)
		return // want: the loop commits after Handle returns, whatever happened
	}
}

// ConsumeEach runs a goroutine per message that handles it, then commits
// it whatever the handler did.
func ConsumeEach(ctx context.Context, r *kafka.Reader, p *Purchases) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		go func(m kafka.Message) {
			p.Handle(m)
			r.CommitMessages(ctx, m)
		}(m)
	}
}

// errStale is a sentinel a processor answers for an old message.
var errStale = errors.New("stale")

// status assigns its error in an if/else and returns it after a sentinel
// comparison (cloud-connector's handleConnectionStatusMessage): its
// callees' nil is still the loop's ack.
func status(ctx context.Context, db *sql.DB, m *kafka.Message) error {
	var err error
	if len(m.Value) > 1 {
		err = online(ctx, db, string(m.Value))
	} else {
		err = offline(ctx, db, string(m.Value))
	}
	if errors.Is(err, errStale) {
		return nil
	}
	return err
}

func offline(ctx context.Context, db *sql.DB, key string) error {
	if _, err := db.ExecContext(ctx, "DELETE FROM connections WHERE client_id = $1", key); err != nil {
		log.Println(err)
		return nil // want: the loop commits a failed delete
	}
	return nil
}

// ConsumeStatus commits when status returns nil.
func ConsumeStatus(ctx context.Context, r *kafka.Reader, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := status(ctx, db, &m); err != nil {
			return
		}
		r.CommitMessages(ctx, m)
	}
}
