// Package txstore is an application's store whose methods each commit a
// transaction of their own: a consumer in another package sees it through
// the Summary fact.
package txstore

import (
	"context"
	"database/sql"
)

// Store writes reports.
type Store struct{ DB *sql.DB }

// SaveReport commits its own transaction.
func (s *Store) SaveReport(ctx context.Context, key []byte) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE report SET report = $1 WHERE cluster = $1", key); err != nil {
		return err
	}
	return tx.Commit()
}

// Lookup reads through the pool: no transaction.
func (s *Store) Lookup(ctx context.Context, key []byte) (string, error) {
	var v string
	err := s.DB.QueryRowContext(ctx, "SELECT report FROM report WHERE cluster = $1", key).Scan(&v)
	return v, err
}
