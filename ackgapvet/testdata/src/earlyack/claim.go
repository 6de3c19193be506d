package earlyack

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"
)

// triggers is a store of trigger locks (a conditional put that succeeds
// once per key) and a client that starts the run.
type triggers struct {
	db   *sql.DB
	http *http.Client
}

func (t *triggers) AcquireTriggerLock(ctx context.Context, key string) (bool, error) {
	return true, nil
}

func (t *triggers) ReleaseTriggerLock(ctx context.Context, key string) error { return nil }

// Handle takes the lock as the "already triggered" marker, then starts the
// run: a crash between the two loses the run, and the redelivery finds the
// lock and skips the message.
func (t *triggers) Handle(msg *message.Message) error {
	ctx := msg.Context()
	ok, err := t.AcquireTriggerLock(ctx, msg.UUID) // want `claims the message with t.AcquireTriggerLock before the work \(an HTTP request \(http.Client.Post\) at line \d+\), and a redelivery that finds the claim skips the message`
	if err != nil {
		return err
	}
	if !ok {
		return nil // already triggered
	}
	if _, err := t.http.Post("https://runs.example.com/start", "application/json", strings.NewReader(msg.UUID)); err != nil {
		_ = t.ReleaseTriggerLock(ctx, msg.UUID)
		return err
	}
	return nil
}

// Mutex holds the lock for the work and gives it back whatever happens: a
// lock, not a marker. Clean.
func (t *triggers) Mutex(msg *message.Message) error {
	ctx := msg.Context()
	ok, err := t.AcquireTriggerLock(ctx, msg.UUID)
	if err != nil || !ok {
		return errors.New("busy")
	}
	defer t.ReleaseTriggerLock(ctx, msg.UUID)
	_, err = t.http.Post("https://runs.example.com/start", "application/json", strings.NewReader(msg.UUID))
	return err
}

// Busy returns an error when the claim is held: the message comes back
// later instead of being skipped. Clean.
func (t *triggers) Busy(msg *message.Message) error {
	ctx := msg.Context()
	ok, err := t.AcquireTriggerLock(ctx, msg.UUID)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("held by another delivery")
	}
	_, err = t.http.Post("https://runs.example.com/start", "application/json", strings.NewReader(msg.UUID))
	return err
}

// InTx claims inside the transaction that also records the call in the
// outbox: the claim rolls back with it. Clean.
func (t *triggers) InTx(msg *message.Message) error {
	ctx := msg.Context()
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ok, err := t.MarkProcessed(ctx, tx, msg.UUID)
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO outbox (key) VALUES ($1)", msg.UUID); err != nil {
		return err
	}
	return tx.Commit()
}

func (t *triggers) MarkProcessed(ctx context.Context, tx *sql.Tx, id string) (bool, error) {
	return true, nil
}

func registerTriggers(r *message.Router, t *triggers) {
	r.AddNoPublisherHandler("h", "t", nil, t.Handle)
	r.AddNoPublisherHandler("m", "t", nil, t.Mutex)
	r.AddNoPublisherHandler("b", "t", nil, t.Busy)
	r.AddNoPublisherHandler("x", "t", nil, t.InTx)
}
