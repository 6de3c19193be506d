// Package pgxpool is a stub of pgx v5's pool.
package pgxpool

import (
	"context"

	"github.com/jackc/pgx/v5"
)

type Pool struct{}

func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error) {
	return pgx.CommandTag{}, nil
}
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row { return nil }
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error)                     { return nil, nil }
