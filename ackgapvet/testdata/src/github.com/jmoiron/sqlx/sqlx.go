// Package sqlx is a stub of github.com/jmoiron/sqlx.
package sqlx

import (
	"context"
	"database/sql"
)

type DB struct{}

func (db *DB) NamedExecContext(ctx context.Context, query string, arg any) (sql.Result, error) {
	return nil, nil
}

type Tx struct{}

func (tx *Tx) MustExec(query string, args ...any) sql.Result { return nil }

// GetContext runs query and scans its one row into dest.
func (db *DB) GetContext(ctx context.Context, dest any, query string, args ...any) error { return nil }
