// Package devices creates a device only when a lookup found none (wave 15's
// payload-tracker-go and wave 16's edge-api): a redelivery finds the row,
// so the create is no append. The audit row, written before any lookup, is one.
package devices

import (
	"context"
	"database/sql"
	"errors"

	"github.com/segmentio/kafka-go"
)

// Repo stores devices.
type Repo struct{ DB *sql.DB }

// Get looks a device up.
func (r *Repo) Get(ctx context.Context, uuid string) (int64, error) {
	var id int64
	err := r.DB.QueryRowContext(ctx, "SELECT id FROM devices WHERE uuid = $1", uuid).Scan(&id)
	return id, err
}

// Create inserts a device.
func (r *Repo) Create(ctx context.Context, uuid string) error {
	_, err := r.DB.ExecContext(ctx, "INSERT INTO devices (uuid) VALUES ($1)", uuid)
	return err
}

// GetStatus returns the status row of a name, the zero Status when there
// is none.
func (r *Repo) GetStatus(ctx context.Context, name string) Status {
	var st Status
	_ = r.DB.QueryRowContext(ctx, "SELECT id, name FROM statuses WHERE name = $1", name).Scan(&st.ID, &st.Name)
	return st
}

// Status is a status row.
type Status struct {
	ID   int64
	Name string
}

// CreateStatus inserts a status name.
func (r *Repo) CreateStatus(ctx context.Context, name string) error {
	_, err := r.DB.ExecContext(ctx, "INSERT INTO statuses (name) VALUES ($1)", name)
	return err
}

// Consume applies inventory events.
func Consume(ctx context.Context, rd *kafka.Reader, r *Repo) error {
	for {
		m, err := rd.FetchMessage(ctx)
		if err != nil {
			return err
		}
		if err := apply(ctx, r, string(m.Value)); err != nil {
			return err
		}
		if err := rd.CommitMessages(ctx, m); err != nil {
			return err
		}
	}
}

func apply(ctx context.Context, r *Repo, uuid string) error {
	if existing := r.GetStatus(ctx, "seen"); existing == (Status{}) {
		if err := r.CreateStatus(ctx, "seen"); err != nil {
			return err
		}
	}
	if _, err := r.Get(ctx, uuid); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			if err := r.Create(ctx, uuid); err != nil {
				return err
			}
		} else {
			return err
		}
	}
	if _, err := r.DB.ExecContext(ctx, "INSERT INTO audit (uuid) VALUES ($1)", uuid); err != nil {
		return err
	}
	var found bool
	if err := r.DB.QueryRowContext(ctx, "SELECT true FROM groups WHERE uuid = $1", uuid).Scan(&found); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if found {
		return nil
	}
	_, err := r.DB.ExecContext(ctx, "INSERT INTO groups (uuid) VALUES ($1)", uuid)
	return err
}
