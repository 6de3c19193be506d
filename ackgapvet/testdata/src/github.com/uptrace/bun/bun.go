// Package bun is a stub of github.com/uptrace/bun: only the names the
// checker reads.
package bun

import (
	"context"
	"database/sql"
)

// DB is a bun database.
type DB struct{}

// InsertQuery builds an INSERT.
type InsertQuery struct{}

// NewInsert starts an INSERT.
func (db *DB) NewInsert() *InsertQuery { return &InsertQuery{} }

// Model sets the row.
func (q *InsertQuery) Model(m any) *InsertQuery { return q }

// On adds an ON CONFLICT clause.
func (q *InsertQuery) On(s string, args ...any) *InsertQuery { return q }

// Exec runs the query.
func (q *InsertQuery) Exec(ctx context.Context, dest ...any) (sql.Result, error) { return nil, nil }
