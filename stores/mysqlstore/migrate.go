package mysqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
)

// migrationLockWait is how long Migrate waits for another migrator's
// GET_LOCK, in seconds.
const migrationLockWait = 60

// Migrations returns ackgap's MariaDB/MySQL migrations rendered for cfg
// (nil = defaults), oldest first. Migrate applies exactly these, one
// statement at a time (they need ANSI_QUOTES in sql_mode).
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

// Migrate implements [stores.Operator.Migrate] with the shared runner. Each
// step holds GET_LOCK('<database>.<prefix>migration') on one connection,
// so concurrent migrators take turns and re-read the version. DDL commits
// on its own in MariaDB and MySQL, so a step is not one transaction: its
// statements are idempotent instead (CREATE TABLE IF NOT EXISTS, DROP
// TABLE IF EXISTS; an ALTER that finds its column or index already there,
// 1060 / 1061 / 1091, counts as done), and the version row is written
// after them: a step cut short runs again whole.
func (s *Store) Migrate(ctx context.Context, p *stores.MigrateParams) (*stores.MigrateResult, error) {
	all, err := sqlbuild.LoadMigrations(migrationFS, "migrations", s.names)
	if err != nil {
		return nil, err
	}
	return sqlbuild.Migrate(ctx, all, p, func(ctx context.Context) (sqlbuild.MigrationTx, error) {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return nil, interpretError("migrate", err)
		}
		m := &migrationConn{s: s, conn: conn}
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(CONCAT(DATABASE(), '.', ?), ?)`, s.names.Migration, migrationLockWait).Scan(&got); err != nil {
			_ = conn.Close()
			return nil, interpretError("migrate: lock", err)
		}
		if got.Int64 != 1 {
			_ = conn.Close()
			return nil, interpretError("migrate: lock", fmt.Errorf("GET_LOCK: another migrator held the lock for %d s", migrationLockWait))
		}
		m.locked = true
		return m, nil
	})
}

// migrationConn is one migration step: a connection holding the
// migration lock.
type migrationConn struct {
	s      *Store
	conn   *sql.Conn
	locked bool
}

func (m *migrationConn) Version(ctx context.Context) (int, error) {
	if _, err := m.conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+m.s.names.Migration+` (
    version    INT          NOT NULL PRIMARY KEY,
    name       VARCHAR(255) NOT NULL,
    applied_at BIGINT       NOT NULL) ENGINE = InnoDB`); err != nil {
		return 0, interpretError("migrate: version table", err)
	}
	var v int
	if err := m.conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+m.s.names.Migration).Scan(&v); err != nil {
		return 0, interpretError("migrate: read version", err)
	}
	return v, nil
}

// Already-done errors of an ALTER run a second time.
const (
	erDupFieldName = 1060 // ER_DUP_FIELDNAME
	erDupKeyName   = 1061 // ER_DUP_KEYNAME
	erCantDropKey  = 1091 // ER_CANT_DROP_FIELD_OR_KEY
)

func (m *migrationConn) Apply(ctx context.Context, step sqlbuild.Step) error {
	for _, stmt := range statements(step.SQL()) {
		if _, err := m.conn.ExecContext(ctx, stmt); err != nil {
			switch code(err) {
			case erDupFieldName, erDupKeyName, erCantDropKey:
				continue
			}
			return interpretError(fmt.Sprintf("migrate: version %d", step.Version), err)
		}
	}
	var err error
	if step.Down {
		_, err = m.conn.ExecContext(ctx, `DELETE FROM `+m.s.names.Migration+` WHERE version = ?`, step.Version)
	} else {
		_, err = m.conn.ExecContext(ctx, `INSERT INTO `+m.s.names.Migration+` (version, name, applied_at) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE name = VALUES(name)`, step.Version, step.Name, micros(timeNow()))
	}
	return interpretError("migrate: record version", err)
}

// Commit releases the lock: every statement committed on its own.
func (m *migrationConn) Commit(ctx context.Context) error {
	return m.release(ctx)
}

func (m *migrationConn) Rollback(ctx context.Context) { _ = m.release(ctx) }

func (m *migrationConn) release(ctx context.Context) error {
	if m.conn == nil {
		return nil
	}
	var err error
	if m.locked {
		_, err = m.conn.ExecContext(ctx, `DO RELEASE_LOCK(CONCAT(DATABASE(), '.', ?))`, m.s.names.Migration)
	}
	cerr := m.conn.Close()
	m.conn = nil
	if err != nil {
		return interpretError("migrate: unlock", err)
	}
	return interpretError("migrate: unlock", cerr)
}

// statements splits a migration file into its statements: SQL comments
// dropped, split at a semicolon that ends a line.
func statements(src string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(src) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
