// Package pgx is a stub of pgx v5.
package pgx

import "context"

type CommandTag struct{}
type Row interface{ Scan(dest ...any) error }

type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}
