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

// Migrate implements [stores.Operator.Migrate]. The version table is
// <prefix>migration; each step runs in its own BEGIN IMMEDIATE
// transaction, which is SQLite's database-wide write lock, so concurrent
// callers apply each step once.
func (s *Store) Migrate(ctx context.Context, p *stores.MigrateParams) (*stores.MigrateResult, error) {
	all, err := sqlbuild.LoadMigrations(migrationFS, "migrations", s.names)
	if err != nil {
		return nil, err
	}
	return sqlbuild.Migrate(ctx, all, p, func(ctx context.Context) (sqlbuild.MigrationTx, error) {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return nil, interpretError("migrate", err)
		}
		return &migrationTx{s: s, tx: tx}, nil
	})
}

// migrationTx is one migration step's BEGIN IMMEDIATE transaction, which
// holds SQLite's write lock: that is the migration lock.
type migrationTx struct {
	s  *Store
	tx *sql.Tx
}

func (m *migrationTx) Version(ctx context.Context) (int, error) {
	if _, err := m.tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+m.s.names.Migration+` (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL)`); err != nil {
		return 0, interpretError("migrate: version table", err)
	}
	var v int
	if err := m.tx.QueryRowContext(ctx, `SELECT COALESCE(max(version), 0) FROM `+m.s.names.Migration).Scan(&v); err != nil {
		return 0, interpretError("migrate: read version", err)
	}
	return v, nil
}

func (m *migrationTx) Apply(ctx context.Context, step sqlbuild.Step) error {
	if _, err := m.tx.ExecContext(ctx, step.SQL()); err != nil {
		return interpretError(fmt.Sprintf("migrate: version %d", step.Version), err)
	}
	var err error
	if step.Down {
		_, err = m.tx.ExecContext(ctx, `DELETE FROM `+m.s.names.Migration+` WHERE version = ?1`, step.Version)
	} else {
		_, err = m.tx.ExecContext(ctx, `INSERT INTO `+m.s.names.Migration+` (version, name, applied_at) VALUES (?1, ?2, unixepoch('subsec') * 1000000)`, step.Version, step.Name)
	}
	return interpretError("migrate: record version", err)
}

func (m *migrationTx) Commit(context.Context) error {
	return interpretError("migrate: commit", m.tx.Commit())
}

func (m *migrationTx) Rollback(context.Context) { _ = m.tx.Rollback() }
