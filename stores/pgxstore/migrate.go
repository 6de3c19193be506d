package pgxstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
	"github.com/ackgap/ackgap/stores/storekit"
)

// Migrations returns ackgap's PostgreSQL migrations rendered for cfg (nil =
// defaults), oldest first, for users who apply SQL with their own tool
// (goose, atlas, a DBA). Migrate applies exactly these.
func Migrations(cfg *Config) ([]stores.Migration, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return sqlbuild.LoadMigrations(migrationFS, "migrations", sqlbuild.TableNames(c.Schema, c.TablePrefix))
}

// Migrate implements [stores.Operator.Migrate]. The version table is
// <prefix>migration; each step runs in its own transaction holding
// pg_advisory_xact_lock on the table's name, so concurrent callers apply
// each step once. It creates the schema if it is missing.
func (s *Store) Migrate(ctx context.Context, p *stores.MigrateParams) (*stores.MigrateResult, error) {
	all, err := sqlbuild.LoadMigrations(migrationFS, "migrations", s.names)
	if err != nil {
		return nil, err
	}
	return sqlbuild.Migrate(ctx, all, p, func(ctx context.Context) (sqlbuild.MigrationTx, error) {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return nil, interpretError("migrate", err)
		}
		return &migrationTx{s: s, tx: tx}, nil
	})
}

// migrationTx is one migration step's transaction on PostgreSQL.
type migrationTx struct {
	s  *Store
	tx pgx.Tx
}

// Version takes the transaction-scoped advisory lock, creates the schema
// and the version table if missing (ackgap's own bookkeeping; the
// migrations proper create everything else) and reads the version.
func (m *migrationTx) Version(ctx context.Context) (int, error) {
	if _, err := m.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, m.s.names.MigrationLockKey); err != nil {
		return 0, interpretError("migrate: lock", err)
	}
	if schema := m.s.cfg.Schema; schema != "" {
		if _, err := m.tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+storekit.QuoteIdentifier(schema)); err != nil {
			return 0, interpretError("migrate: create schema", err)
		}
	}
	if _, err := m.tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+m.s.names.Migration+` (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, interpretError("migrate: version table", err)
	}
	var v int
	if err := m.tx.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM `+m.s.names.Migration).Scan(&v); err != nil {
		return 0, interpretError("migrate: read version", err)
	}
	return v, nil
}

func (m *migrationTx) Apply(ctx context.Context, step sqlbuild.Step) error {
	if _, err := m.tx.Exec(ctx, step.SQL()); err != nil {
		return interpretError(fmt.Sprintf("migrate: version %d", step.Version), err)
	}
	var err error
	if step.Down {
		_, err = m.tx.Exec(ctx, `DELETE FROM `+m.s.names.Migration+` WHERE version = $1`, step.Version)
	} else {
		_, err = m.tx.Exec(ctx, `INSERT INTO `+m.s.names.Migration+` (version, name) VALUES ($1, $2)`, step.Version, step.Name)
	}
	return interpretError("migrate: record version", err)
}

func (m *migrationTx) Commit(ctx context.Context) error {
	return interpretError("migrate: commit", m.tx.Commit(ctx))
}

func (m *migrationTx) Rollback(ctx context.Context) { _ = m.tx.Rollback(ctx) }
