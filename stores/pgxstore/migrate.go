package pgxstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
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

// Migrate implements [stores.Store.Migrate]. The version table is
// <prefix>migration; each step runs in its own transaction holding
// pg_advisory_xact_lock on the table's name, so concurrent callers apply
// each step once. It creates the schema if it is missing.
func (s *Store) Migrate(ctx context.Context, p *stores.MigrateParams) (*stores.MigrateResult, error) {
	all, err := sqlbuild.LoadMigrations(migrationFS, "migrations", s.names)
	if err != nil {
		return nil, err
	}
	res := &stores.MigrateResult{}
	for {
		done, err := s.migrateStep(ctx, all, p, res)
		if err != nil {
			return res, err
		}
		if done {
			return res, nil
		}
	}
}

// migrateStep runs the next step of the plan under the lock, re-reading the
// version each time so a concurrent migrator's work is not repeated.
func (s *Store) migrateStep(ctx context.Context, all []sqlbuild.Migration, p *stores.MigrateParams, res *stores.MigrateResult) (done bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, interpretError("migrate", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, s.names.MigrationLockKey); err != nil {
		return false, interpretError("migrate: lock", err)
	}
	current, err := s.currentVersion(ctx, tx)
	if err != nil {
		return false, err
	}
	res.Version = current
	steps, err := sqlbuild.Plan(all, current, p)
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	if len(steps) == 0 {
		return true, nil
	}
	step := steps[0]
	if _, err := tx.Exec(ctx, step.SQL()); err != nil {
		return false, interpretError(fmt.Sprintf("migrate: version %d", step.Version), err)
	}
	if step.Down {
		_, err = tx.Exec(ctx, `DELETE FROM `+s.names.Migration+` WHERE version = $1`, step.Version)
	} else {
		_, err = tx.Exec(ctx, `INSERT INTO `+s.names.Migration+` (version, name) VALUES ($1, $2)`, step.Version, step.Name)
	}
	if err != nil {
		return false, interpretError("migrate: record version", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, interpretError("migrate: commit", err)
	}
	res.Applied = append(res.Applied, step.Version)
	res.Version = step.Version
	if step.Down {
		res.Version = step.Version - 1
	}
	return len(steps) == 1, nil
}

func (s *Store) currentVersion(ctx context.Context, tx pgx.Tx) (int, error) {
	// Schema and version table are ackgap's own bookkeeping, created
	// idempotently; the migrations proper create everything else.
	if schema := s.cfg.Schema; schema != "" {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+stores.QuoteIdentifier(schema)); err != nil {
			return 0, interpretError("migrate: create schema", err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.names.Migration+` (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, interpretError("migrate: version table", err)
	}
	var v int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM `+s.names.Migration).Scan(&v); err != nil {
		return 0, interpretError("migrate: read version", err)
	}
	return v, nil
}
