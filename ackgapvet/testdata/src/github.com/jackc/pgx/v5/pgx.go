// Package pgx is a stub of pgx v5.
package pgx

import "context"

type CommandTag struct{}
type Row interface{ Scan(dest ...any) error }

type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	CopyFrom(ctx context.Context, table Identifier, columns []string, rows CopyFromSource) (int64, error)
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Identifier is a table name.
type Identifier []string

// CopyFromSource gives COPY its rows.
type CopyFromSource interface{ Next() bool }

// CopyFromRows makes a source of rows.
func CopyFromRows(rows [][]any) CopyFromSource { return nil }
