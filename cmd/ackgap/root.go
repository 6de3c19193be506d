package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// Exit codes; see the package doc.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitNotFound = 3
	exitPending  = 4
)

// env is what the command takes from its process, so tests can run it in
// one: arguments, output streams, environment and clock.
type env struct {
	args           []string
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
}

// exitError carries an exit code other than exitFailed; a nil err prints
// nothing.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErrorf returns an error that exits with exitUsage.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// failed marks err as a failure of the command proper (exitFailed), as
// opposed to errors cobra returns for bad usage.
func failed(err error) error {
	if err == nil {
		return nil
	}
	var e *exitError
	if errors.As(err, &e) {
		return err
	}
	return &exitError{code: exitFailed, err: err}
}

// app holds the global flags and the environment of one run.
type app struct {
	env    *env
	dsn    string
	schema string
	prefix string
	json   bool
}

// run runs the command line in e and returns the exit code.
func run(ctx context.Context, e *env) int {
	a := &app{env: e}
	root := a.rootCommand()
	root.SetArgs(e.args)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		// Errors that did not come from a command's RunE are cobra's: an
		// unknown command, a bad flag or argument count.
		ee = &exitError{code: exitUsage, err: err}
	}
	if ee.err != nil {
		fmt.Fprintf(e.stderr, "ackgap: %s\n", redactErr(ee.err, a.dsn))
		if ee.code == exitUsage {
			fmt.Fprintln(e.stderr, `Run "ackgap --help" for usage.`)
		}
	}
	return ee.code
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ackgap",
		Short: "Operate ackgap's inbox and outbox tables on PostgreSQL, MariaDB/MySQL or SQLite",
		Long: `ackgap operates the tables of github.com/ackgap/ackgap: it applies and prints
the migrations, shows the inbox and the outbox at a glance, finds what happened
to one event, lists, redrives and prunes outbox rows, checks a deployment
against ackgap's rules (doctor), and serves the same on web pages (console).

The database comes from --dsn (or ACKGAP_DSN): postgres://... or postgresql://...
for PostgreSQL, sqlite:PATH for an SQLite file, mysql://user@host:3306/db (or
the driver's user@tcp(host:3306)/db) for MariaDB or MySQL. --schema (ACKGAP_SCHEMA) and
--prefix (ACKGAP_PREFIX) name the tables as the application's store Config does.

Exit codes: 0 success; 1 the command failed; 2 usage error; 3 nothing found
("event", "outbox show"); 4 migrations pending ("migrate status", "status"); 5 a check
failed ("doctor").`,
		Example: `  export ACKGAP_DSN='postgres://app@db:5432/app?sslmode=require'
  ackgap migrate up
  ackgap status
  ackgap outbox list --state dead`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.fallback(cmd, "dsn", "ACKGAP_DSN", &a.dsn)
			a.fallback(cmd, "schema", "ACKGAP_SCHEMA", &a.schema)
			a.fallback(cmd, "prefix", "ACKGAP_PREFIX", &a.prefix)
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.dsn, "dsn", "", "database: postgres://..., mysql://... or sqlite:PATH (env ACKGAP_DSN)")
	pf.StringVar(&a.schema, "schema", "", "PostgreSQL schema of ackgap's tables; default the search_path (env ACKGAP_SCHEMA)")
	pf.StringVar(&a.prefix, "prefix", "", `table name prefix; default "ackgap_" (env ACKGAP_PREFIX)`)
	pf.BoolVar(&a.json, "json", false, "print JSON instead of a table")
	root.AddCommand(a.migrateCommand(), a.statusCommand(), a.eventCommand(), a.outboxCommand(), a.doctorCommand(), a.consoleCommand())
	return root
}

// fallback sets *dst from the environment variable when the flag was not
// given.
func (a *app) fallback(cmd *cobra.Command, flag, envVar string, dst *string) {
	if cmd.Flags().Changed(flag) {
		return
	}
	if v := a.env.getenv(envVar); v != "" {
		*dst = v
	}
}

// dialect says which store a DSN names.
type dialect int

const (
	postgres dialect = iota + 1
	sqlite
	mysqlDialect
)

// isMySQLDSN says dsn names MariaDB or MySQL: a mysql:// or mariadb:// URL,
// or the go-sql-driver form user@tcp(host:3306)/db (also unix(...)).
func isMySQLDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "mysql://") || strings.HasPrefix(dsn, "mariadb://") ||
		strings.Contains(dsn, "tcp(") || strings.Contains(dsn, "unix(")
}

// parseDSN returns the dialect of a.dsn and, for SQLite, the file path.
func (a *app) parseDSN() (dialect, string, error) {
	switch {
	case a.dsn == "":
		return 0, "", usageErrorf("no database: set --dsn or ACKGAP_DSN (postgres://..., mysql://... or sqlite:PATH)")
	case strings.HasPrefix(a.dsn, "postgres://"), strings.HasPrefix(a.dsn, "postgresql://"):
		return postgres, "", nil
	case strings.HasPrefix(a.dsn, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(a.dsn, "sqlite:"), "//")
		if path == "" {
			return 0, "", usageErrorf("--dsn sqlite: needs a file path (sqlite:PATH)")
		}
		if a.schema != "" {
			return 0, "", usageErrorf("--schema is for PostgreSQL; SQLite has no schemas")
		}
		return sqlite, path, nil
	case isMySQLDSN(a.dsn):
		if a.schema != "" {
			return 0, "", usageErrorf("--schema is for PostgreSQL; name the MariaDB/MySQL database in the DSN")
		}
		return mysqlDialect, "", nil
	}
	// A bare file path (the billing demo prints one) is named back with
	// the fix; it holds no password. Any other DSN is not echoed: a
	// key=value DSN may hold one.
	if fi, err := os.Stat(a.dsn); err == nil && fi.Mode().IsRegular() {
		return 0, "", usageErrorf("--dsn %s is a file: for an SQLite database write --dsn sqlite:%s", a.dsn, a.dsn)
	}
	return 0, "", usageErrorf("--dsn must start with postgres://, postgresql://, mysql://, mariadb:// or sqlite:PATH, or be user@tcp(host:3306)/db")
}

// migrations returns the store's migrations rendered for the flags,
// without connecting.
func (a *app) migrations() ([]stores.Migration, error) {
	d, _, err := a.parseDSN()
	if err != nil {
		return nil, err
	}
	var ms []stores.Migration
	switch d {
	case postgres:
		ms, err = pgxstore.Migrations(&pgxstore.Config{Schema: a.schema, TablePrefix: a.prefix})
	case mysqlDialect:
		ms, err = mysqlstore.Migrations(&mysqlstore.Config{TablePrefix: a.prefix})
	default:
		ms, err = sqlitestore.Migrations(&sqlitestore.Config{TablePrefix: a.prefix})
	}
	if err != nil {
		return nil, usageErrorf("%w", err)
	}
	return ms, nil
}

// openMode says what open requires of the database.
type openMode int

const (
	// openCreate creates a missing SQLite file (migrate up).
	openCreate openMode = iota
	// openExisting requires the SQLite file to exist: a typo in a path must
	// not create a new empty database.
	openExisting
	// openMigrated also requires ackgap's tables (at least migration 1).
	openMigrated
)

// open connects to the store in mode. The caller must call the returned
// close func.
func (a *app) open(ctx context.Context, mode openMode) (stores.Operator, func(), error) {
	s, closeFn, err := a.connect(ctx, mode == openCreate)
	if err != nil || mode != openMigrated {
		return s, closeFn, err
	}
	ms, err := s.MigrationStatus(ctx, &stores.MigrationStatusParams{})
	if err != nil {
		closeFn()
		return nil, nil, failed(err)
	}
	if ms.Version == 0 {
		closeFn()
		return nil, nil, failed(fmt.Errorf("%s: %s", a.noTables(), noTablesFix))
	}
	return s, closeFn, nil
}

// The fixes for a schema without ackgap's tables and for one behind the
// code, in the same words from every command.
const (
	noTablesFix = `run "ackgap migrate up" first, or check --schema and --prefix`
	migrateFix  = `run "ackgap migrate up" (or apply "ackgap migrate sql" with your tool) before deploying this version`
)

// noTables says where ackgap's tables were looked for and not found:
// "no ackgap tables (prefix "ackgap_" in schema "x")".
func (a *app) noTables() string {
	where := "prefix " + strconv.Quote(stores.TablePrefixDefault)
	if a.prefix != "" {
		where = "prefix " + strconv.Quote(a.prefix)
	}
	if a.schema != "" {
		where += " in schema " + strconv.Quote(a.schema)
	}
	return "no ackgap tables (" + where + ")"
}

// connect opens the store; create allows creating a missing SQLite file.
func (a *app) connect(ctx context.Context, create bool) (stores.Operator, func(), error) {
	d, path, err := a.parseDSN()
	if err != nil {
		return nil, nil, err
	}
	if d == sqlite {
		if _, err := os.Stat(filepath.Dir(path)); err != nil {
			// Neither a read nor migrate up can open it: say why.
			return nil, nil, failed(fmt.Errorf("sqlite database %s: its directory: %w (create the directory, or check the path)", path, err))
		}
		if !create {
			if _, err := os.Stat(path); err != nil {
				return nil, nil, failed(fmt.Errorf("sqlite database %s: %w (run \"ackgap migrate up\" to create it)", path, err))
			}
		}
		s, err := sqlitestore.Open(ctx, path, &sqlitestore.Config{TablePrefix: a.prefix})
		if err != nil {
			return nil, nil, failed(err)
		}
		return s, func() { _ = s.Close() }, nil
	}
	if d == mysqlDialect {
		s, err := mysqlstore.Open(ctx, a.dsn, &mysqlstore.Config{TablePrefix: a.prefix, MaxOpenConns: 2})
		if err != nil {
			if strings.Contains(err.Error(), "invalid config") {
				return nil, nil, usageErrorf("--dsn: %w", err)
			}
			return nil, nil, failed(err)
		}
		return s, func() { _ = s.Close() }, nil
	}
	cfg, err := pgxpool.ParseConfig(a.dsn)
	if err != nil {
		return nil, nil, usageErrorf("--dsn: %s", redactErr(err, a.dsn))
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, failed(err)
	}
	s, err := pgxstore.New(pool, &pgxstore.Config{Schema: a.schema, TablePrefix: a.prefix})
	if err != nil {
		pool.Close()
		return nil, nil, usageErrorf("%w", err)
	}
	return s, pool.Close, nil
}

// redactErr returns err's text with the DSN's password, if any, replaced
// where a password is written: the whole DSN, a "user:password@" userinfo
// (the password as given or URL-escaped) and a "password=" keyword. The
// rest of the text is left alone: replacing every occurrence of a short
// password garbled the driver's message ("storxxxxx unavailablxxxxx" for
// the password "e").
func redactErr(err error, dsn string) string {
	msg := err.Error()
	u, perr := url.Parse(dsn)
	if perr != nil || u.User == nil {
		return msg
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, dsn, u.Redacted())
	for _, p := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw)} {
		msg = strings.ReplaceAll(msg, ":"+p+"@", ":xxxxx@")
		msg = strings.ReplaceAll(msg, "password="+p, "password=xxxxx")
	}
	return msg
}
