package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
)

// Migrations returns ackgap's SQLite migrations rendered for cfg (nil =
// defaults), oldest first, for users who apply SQL with their own tool.
// Migrate applies exactly these.
func Migrations(cfg *Config) ([]stores.Migration, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return sqlbuild.LoadMigrations(migrationFS, "migrations", sqlbuild.TableNames("", c.TablePrefix))
}

// Migrate implements [stores.Store.Migrate]. The version table is
// <prefix>migration; each step runs in its own BEGIN IMMEDIATE
// transaction, which is SQLite's database-wide write lock, so concurrent
// callers apply each step once.
func (s *Store) Migrate(ctx context.Context, p *stores.MigrateParams) (*stores.MigrateResult, error) {
	all, err := sqlbuild.LoadMigrations(migrationFS, "migrations", s.names)
	if err != nil {
		return nil, err
	}
	res := &stores.MigrateResult{}
	for {
		done, err := s.migrateStep(ctx, all, p, res)
		if err != nil || done {
			return res, err
		}
	}
}

func (s *Store) migrateStep(ctx context.Context, all []sqlbuild.Migration, p *stores.MigrateParams, res *stores.MigrateResult) (done bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, interpretError("migrate", err)
	}
	defer func() { _ = tx.Rollback() }()
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
	if _, err := tx.ExecContext(ctx, step.SQL()); err != nil {
		return false, interpretError(fmt.Sprintf("migrate: version %d", step.Version), err)
	}
	if step.Down {
		_, err = tx.ExecContext(ctx, `DELETE FROM `+s.names.Migration+` WHERE version = ?1`, step.Version)
	} else {
		_, err = tx.ExecContext(ctx, `INSERT INTO `+s.names.Migration+` (version, name, applied_at) VALUES (?1, ?2, unixepoch('subsec') * 1000000)`, step.Version, step.Name)
	}
	if err != nil {
		return false, interpretError("migrate: record version", err)
	}
	if err := tx.Commit(); err != nil {
		return false, interpretError("migrate: commit", err)
	}
	res.Applied = append(res.Applied, step.Version)
	res.Version = step.Version
	if step.Down {
		res.Version = step.Version - 1
	}
	return len(steps) == 1, nil
}

func (s *Store) currentVersion(ctx context.Context, tx *sql.Tx) (int, error) {
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+s.names.Migration+` (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL)`); err != nil {
		return 0, interpretError("migrate: version table", err)
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(max(version), 0) FROM `+s.names.Migration).Scan(&v); err != nil {
		return 0, interpretError("migrate: read version", err)
	}
	return v, nil
}
