package billingsim

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/stores/mysqlstore"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// RunDemo opens the store dsn names (SQLite in a temp dir when empty),
// runs the demo on it with o and closes it; keep keeps the PostgreSQL
// schema, the MariaDB database (or the SQLite file) at exit. The error means the demo could not
// run; whether it ran correctly is [Summary.Check].
func RunDemo(ctx context.Context, dsn string, keep bool, o Options) (*Summary, error) {
	if dsn == "" {
		b, err := openSQLite(ctx, keep)
		if err != nil {
			return nil, err
		}
		return runAndClose(ctx, b, o)
	}
	if isMySQL(dsn) {
		b, err := openMySQL(ctx, dsn, keep)
		if err != nil {
			return nil, err
		}
		return runAndClose(ctx, b, o)
	}
	// Room for every instance's transactions (one per partition on
	// GoChannel and Kafka, one per worker on SQS; with CrashRestart, a
	// replacement instance's too), a concurrent copy, the demo's own queries, and two short
	// statements per relay (a claim and a record; effects hold none, and
	// each relay listens on a connection outside the pool).
	od := o.WithDefaults()
	instances, perInstance := od.Partitions, 1
	if od.CrashRestart {
		instances++
	}
	if od.Broker == BrokerSQS {
		perInstance = sqsbroker.WorkersDefault
	}
	b, err := openPostgres(ctx, dsn, int32(instances*perInstance+2+2*od.Relays), keep)
	if err != nil {
		return nil, err
	}
	return runAndClose(ctx, b, o)
}

func runAndClose[TTx any](ctx context.Context, b *backend[TTx], o Options) (s *Summary, err error) {
	defer func() {
		if cerr := b.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", b.name, cerr))
		}
		if err != nil && s == nil && strings.HasSuffix(b.location, ", kept") {
			// No summary to print its location (an interrupted run):
			// say where the kept data is.
			err = fmt.Errorf("%w (%s: %s)", err, b.name, b.location)
		}
	}()
	return run(ctx, b, o)
}

// openSQLite opens a new SQLite database in a temp dir; close removes the
// dir unless keep.
func openSQLite(ctx context.Context, keep bool) (*backend[*sql.Tx], error) {
	dir, err := os.MkdirTemp("", "ackgap-billing-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "billing.db")
	store, err := sqlitestore.Open(ctx, path, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	db := store.DB()
	location := path + ", removed at exit"
	if keep {
		location = path + ", kept"
	}
	return &backend[*sql.Tx]{
		name: "sqlite", location: location, store: store, outbox: store,
		db: sqlAppDB(db, func(n int) string { return "?" + strconv.Itoa(n) }),
		close: func() error {
			err := store.Close()
			if !keep {
				err = errors.Join(err, os.RemoveAll(dir))
			}
			return err
		},
	}, nil
}

// openPostgres creates a fresh schema in the database dsn names and returns
// a store whose tables, and the orders table, live in it (the pool's
// search_path); close drops the schema unless keep. It touches nothing
// outside that schema.
func openPostgres(ctx context.Context, dsn string, maxConns int32, keep bool) (*backend[pgx.Tx], error) {
	const forms = "must be postgres://..., mysql://... (or user@tcp(host:3306)/db), or empty for SQLite in a temp dir (-keep keeps it; the demo makes its own SQLite file)"
	if scheme, _, ok := strings.Cut(dsn, ":"); ok && !strings.Contains(scheme, "=") && scheme != "postgres" && scheme != "postgresql" {
		return nil, fmt.Errorf("-dsn %q: %s", redactDSN(dsn), forms)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// Neither a URL nor pgx's keyword/value form (host=... dbname=...).
		return nil, fmt.Errorf("-dsn %q: %s (%w)", redactDSN(dsn), forms, err)
	}
	schema := "billing_" + randomHex(6)
	ident := pgx.Identifier{schema}.Sanitize()
	if err := adminExec(ctx, cfg, "CREATE SCHEMA "+ident); err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return adminExec(ctx, cfg, "DROP SCHEMA "+ident+" CASCADE")
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = max(cfg.MaxConns, maxConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("pool: %w", err), drop())
	}
	store, err := pgxstore.New(pool, &pgxstore.Config{Schema: schema})
	if err != nil {
		pool.Close()
		return nil, errors.Join(err, drop())
	}
	where := fmt.Sprintf("schema %s in %s:%d/%s", schema, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	if keep {
		where += ", kept"
	} else {
		where += ", dropped at exit"
	}
	return &backend[pgx.Tx]{
		name: "postgres", location: where, schema: schema, store: store, outbox: store,
		db: appDB{
			exec: func(ctx context.Context, query string, args ...any) error {
				_, err := pool.Exec(ctx, query, args...)
				return err
			},
			queryInt: func(ctx context.Context, query string) (n int64, err error) {
				err = pool.QueryRow(ctx, query).Scan(&n)
				return n, err
			},
			placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		},
		close: func() error {
			pool.Close()
			if keep {
				return nil
			}
			return drop()
		},
	}, nil
}

// isMySQL says dsn names MariaDB or MySQL (see mysqlstore.ParseDSN).
func isMySQL(dsn string) bool {
	return strings.HasPrefix(dsn, "mysql://") || strings.HasPrefix(dsn, "mariadb://") || strings.Contains(dsn, "tcp(")
}

// openMySQL creates a fresh database billing_<hex> on the server dsn names
// (its own database is only the way in) and returns a store whose tables,
// and the orders table, live in it; close drops it unless keep.
func openMySQL(ctx context.Context, dsn string, keep bool) (*backend[*sql.Tx], error) {
	cfg, err := mysqlstore.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	name := "billing_" + randomHex(6)
	admin, err := mysqlstore.Open(ctx, cfg.FormatDSN(), &mysqlstore.Config{MaxOpenConns: 1})
	if err != nil {
		return nil, err // names itself: "mysqlstore: open: ..."
	}
	defer admin.Close()
	if _, err := admin.DB().ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	drop := func() error {
		a, err := mysqlstore.Open(context.Background(), cfg.FormatDSN(), &mysqlstore.Config{MaxOpenConns: 1})
		if err != nil {
			return err
		}
		defer a.Close()
		_, err = a.DB().ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`")
		return err
	}
	where := fmt.Sprintf("database %s on %s", name, cfg.Addr)
	cfg.DBName = name
	store, err := mysqlstore.Open(ctx, cfg.FormatDSN(), nil)
	if err != nil {
		return nil, errors.Join(err, drop())
	}
	if keep {
		where += ", kept"
	} else {
		where += ", dropped at exit"
	}
	db := store.DB()
	return &backend[*sql.Tx]{
		name: "mariadb", location: where, schema: name, store: store, outbox: store,
		db: sqlAppDB(db, func(int) string { return "?" }),
		close: func() error {
			err := store.Close()
			if !keep {
				err = errors.Join(err, drop())
			}
			return err
		},
	}, nil
}

// adminExec runs one statement on a connection of its own, outside the
// demo's pool (whose search_path is the schema being created or dropped).
func adminExec(ctx context.Context, cfg *pgxpool.Config, stmt string) error {
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// redactDSN returns dsn with the password of a URL replaced by xxxxx.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// sqlAppDB is the application's view of a database/sql handle (SQLite,
// MariaDB): placeholder renders the n-th bind parameter in its dialect.
func sqlAppDB(db *sql.DB, placeholder func(n int) string) appDB {
	return appDB{
		exec: func(ctx context.Context, query string, args ...any) error {
			_, err := db.ExecContext(ctx, query, args...)
			return err
		},
		queryInt: func(ctx context.Context, query string) (n int64, err error) {
			err = db.QueryRowContext(ctx, query).Scan(&n)
			return n, err
		},
		placeholder: placeholder,
	}
}
