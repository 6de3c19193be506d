package mysqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
	"github.com/ackgap/ackgap/stores/storekit"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Defaults of [Config].
const (
	// MaxOpenConnsDefault caps the pool Open keeps.
	MaxOpenConnsDefault = 16
)

// SQLMode is the session sql_mode Open sets: the server's own plus
// ANSI_QUOTES, so that ackgap's identifiers (quoted "like this", shared
// with the other SQL stores) parse. A *sql.DB given to [New] must set it
// too (open it from [ParseDSN]'s config).
const SQLMode = "CONCAT(@@sql_mode, ',ANSI_QUOTES')"

// Config configures a [Store]. The zero value is ready to use.
type Config struct {
	// TablePrefix starts every table and index name. Default
	// stores.TablePrefixDefault ("ackgap_").
	TablePrefix string
	// MaxOpenConns caps the connections Open keeps. Default
	// MaxOpenConnsDefault (16).
	MaxOpenConns int
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.TablePrefix == "" {
		c.TablePrefix = stores.TablePrefixDefault
	}
	if c.MaxOpenConns == 0 {
		c.MaxOpenConns = MaxOpenConnsDefault
	}
	return c
}

func (c Config) validate() error {
	errs := []error{storekit.ValidIdentifier("TablePrefix", c.TablePrefix+"inbox_received_at_idx")}
	if c.MaxOpenConns < 1 {
		errs = append(errs, fmt.Errorf("MaxOpenConns is %d, must be at least 1", c.MaxOpenConns))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// Store is the MariaDB / MySQL [stores.Store]. It is safe for concurrent
// use.
type Store struct {
	db     *sql.DB
	ownsDB bool
	names  sqlbuild.Names
	// txOpts begins every store transaction: nil on Open's pool, whose
	// sessions are READ COMMITTED from the start (readCommittedConnector),
	// txOptions on a *sql.DB given to New.
	txOpts *sql.TxOptions
	// progress holds, per open *sql.Tx, the watermarks it writes at
	// commit (pendingProgress; holdProgress, writeProgress); CommitTx and
	// RollbackTx forget them.
	progress sync.Map
}

var _ stores.Store[*sql.Tx] = (*Store)(nil)

// txOptions: every store transaction runs at READ COMMITTED. Under
// InnoDB's default REPEATABLE READ, concurrent inserts of inbox keys in one
// gap deadlock (1213) through gap locks. On a *sql.DB given to New the
// level is set per transaction (the driver sends SET TRANSACTION
// ISOLATION LEVEL, a round trip of its own, before START TRANSACTION); on
// Open's pool each session is set once, when it connects
// (readCommittedConnector), and transactions begin with START
// TRANSACTION alone.
var txOptions = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// setSessionReadCommitted makes every later transaction of a session READ
// COMMITTED. The statement, unlike the variables tx_isolation (MariaDB)
// and transaction_isolation (MySQL 8, MariaDB 11.1), means the same on
// every server this store supports.
const setSessionReadCommitted = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"

// readCommittedConnector is the driver's connector with every new
// connection's session set to READ COMMITTED (setSessionReadCommitted).
type readCommittedConnector struct{ driver.Connector }

// Connect connects and sets the session's isolation level; a connection
// whose SET fails is closed and the error returned.
func (c readCommittedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("mysqlstore: the driver's connection cannot execute statements")
	}
	if _, err := ex.ExecContext(ctx, setSessionReadCommitted, nil); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// ParseDSN accepts the driver's own DSN (user:pass@tcp(host:3306)/db?...)
// or a URL mysql://user:pass@host:3306/db?param=value (also mariadb://),
// and returns the driver config with sql_mode ANSI_QUOTES, parseTime off,
// clientFoundRows off (affected rows count changed rows only, which
// guarded transitions rely on: see [Store.TransitionIfStateTx]) and
// interpolateParams on: the driver sends a statement with its parameters
// escaped into its text, one round trip, instead of a server-side prepare,
// an execute and a close per call (database/sql prepares every statement
// with arguments otherwise, which doubled the round trips of a message's
// transaction). The driver refuses interpolation on the multi-byte
// character sets where escaping is unsafe (big5, gbk, sjis, cp932); use
// utf8mb4.
func ParseDSN(dsn string) (*mysql.Config, error) {
	native := dsn
	if rest, ok := strings.CutPrefix(dsn, "mysql://"); ok {
		native = urlToNative(rest)
	} else if rest, ok := strings.CutPrefix(dsn, "mariadb://"); ok {
		native = urlToNative(rest)
	}
	cfg, err := mysql.ParseDSN(native)
	if err != nil {
		return nil, fmt.Errorf("invalid config: dsn: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("invalid config: dsn names no database")
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["sql_mode"] = SQLMode
	cfg.ClientFoundRows = false
	cfg.ParseTime = false
	cfg.InterpolateParams = true
	return cfg, nil
}

// urlToNative turns user:pass@host:port/db?q into the driver's
// user:pass@tcp(host:port)/db?q.
func urlToNative(rest string) string {
	userinfo, hostpath := "", rest
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		userinfo, hostpath = rest[:i+1], rest[i+1:]
		if u, err := url.PathUnescape(userinfo); err == nil {
			userinfo = u
		}
	}
	host, path := hostpath, "/"
	if i := strings.Index(hostpath, "/"); i >= 0 {
		host, path = hostpath[:i], hostpath[i:]
	}
	if host == "" {
		host = "127.0.0.1:3306"
	} else if !strings.Contains(host, ":") {
		host += ":3306"
	}
	return userinfo + "tcp(" + host + ")" + path
}

// Open connects to the database of dsn (see [ParseDSN]) and returns a Store
// that owns the pool: Close closes it. cfg nil means all defaults. It
// returns an error wrapping "invalid config", or wrapping
// ackgap.ErrStoreUnavailable when the server cannot be reached.
func Open(ctx context.Context, dsn string, cfg *Config) (*Store, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	mc, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	db := sql.OpenDB(readCommittedConnector{conn})
	db.SetMaxOpenConns(c.MaxOpenConns)
	db.SetMaxIdleConns(c.MaxOpenConns)
	db.SetConnMaxLifetime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, interpretError("open", err)
	}
	s := newStore(db, c)
	s.ownsDB = true
	s.txOpts = nil // every session is READ COMMITTED already
	return s, nil
}

// New returns a Store on a *sql.DB the caller opened with the "mysql"
// driver and owns. Its connections must run with ANSI_QUOTES in sql_mode
// and without clientFoundRows (open it from [ParseDSN]'s config). Its
// sessions keep their isolation level: the store sets READ COMMITTED on
// each of its transactions, a round trip that Open's pool saves. cfg nil
// means all defaults; MaxOpenConns is not used.
func New(db *sql.DB, cfg *Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("invalid config: db is nil")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return newStore(db, c), nil
}

func newStore(db *sql.DB, c Config) *Store {
	return &Store{db: db, names: sqlbuild.TableNames("", c.TablePrefix), txOpts: txOptions}
}

// DB returns the underlying database, for the application's own tables.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database if Open opened it; it is safe to call twice.
func (s *Store) Close() error {
	if !s.ownsDB {
		return nil
	}
	return s.db.Close()
}

// TxFromContext returns the *sql.Tx that the inbox middleware opened for
// the message whose context is ctx, and false outside a handler.
func TxFromContext(ctx context.Context) (*sql.Tx, bool) {
	return ackgap.TxFromContext[*sql.Tx](ctx)
}

// begin starts a READ COMMITTED transaction.
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, s.txOpts)
	if err != nil {
		return nil, beginError(err)
	}
	return tx, nil
}

// BeginInboxDeferred implements [stores.Store.BeginInboxDeferred] at
// once: a READ COMMITTED transaction and a plain INSERT of the inbox row. A duplicate key (1062)
// rolls back only that statement on MariaDB and MySQL, so no savepoint is
// needed: 1062 means the event was applied, and the stored hash is read.
func (s *Store) BeginInboxDeferred(ctx context.Context, p *stores.BeginInboxParams) (*stores.BeginInboxResult[*sql.Tx], error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	var traceParent any
	if p.TraceParent != "" {
		traceParent = p.TraceParent
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO `+s.names.Inbox+` (consumer, event_id, payload_hash, received_at, trace_parent)
VALUES (?, ?, ?, ?, ?)`, p.Consumer, p.EventID, p.PayloadHash, micros(p.Now), traceParent)
	if err == nil {
		if p.Progress != nil {
			s.holdProgress(tx, p.Consumer, []stores.Progress{*p.Progress})
		}
		return &stores.BeginInboxResult[*sql.Tx]{Tx: tx}, nil
	}
	if !isCode(err, erDupEntry) {
		_ = tx.Rollback()
		return nil, interpretError("insert inbox row", err)
	}
	var stored []byte
	var storedTrace sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT payload_hash, trace_parent FROM `+s.names.Inbox+` WHERE consumer = ? AND event_id = ?`,
		p.Consumer, p.EventID).Scan(&stored, &storedTrace)
	_ = tx.Rollback()
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, interpretError("read inbox row", err)
	}
	return &stores.BeginInboxResult[*sql.Tx]{
		Duplicate:       true,
		PayloadMismatch: stored != nil && p.PayloadHash != nil && !bytes.Equal(stored, p.PayloadHash),
		TraceParent:     storedTrace.String,
	}, nil
}

// CommitTx implements [stores.Store.CommitTx]: the transaction's progress
// rows (BeginInboxParams.Progress, BeginInboxManyParams.Progress; migration
// 004) are upserted first, in one statement, then COMMIT. A failed upsert
// rolls back and is returned.
func (s *Store) CommitTx(ctx context.Context, tx *sql.Tx) error {
	if err := s.writeProgress(ctx, tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return interpretError("commit", tx.Commit())
}

// RollbackTx implements [stores.Store.RollbackTx].
func (s *Store) RollbackTx(_ context.Context, tx *sql.Tx) error {
	s.progress.Delete(tx)
	err := tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return interpretError("rollback", err)
}

// TransitionIfStateTx implements [stores.Store.TransitionIfStateTx]: one
// UPDATE ... WHERE key = ? AND state IN (from...); only when it affected
// no row, a SELECT of the current state tells already applied from
// refused. Affected rows are rows changed (the driver's clientFoundRows is
// off): a transition whose Set leaves every column as it was reports 0
// and is then told apart by that SELECT, which sees the state already at
// To, so it reads as TransitionAlreadyApplied rather than applied. Schema
// names another database on the same server.
func (s *Store) TransitionIfStateTx(ctx context.Context, tx *sql.Tx, p *ackgap.Transition) (*ackgap.TransitionResult, error) {
	tp := p.WithDefaults()
	if err := tp.Validate(); err != nil {
		return nil, err
	}
	update, args, current, currentArgs := sqlbuild.Transition(dialect, &tp)
	res, err := tx.ExecContext(ctx, update, args...)
	if err != nil {
		return nil, interpretError("transition", err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return &ackgap.TransitionResult{Outcome: ackgap.TransitionApplied, Found: true, Previous: storekit.AppliedFrom(tp.From)}, nil
	}
	var state string
	err = tx.QueryRowContext(ctx, current, currentArgs...).Scan(&state)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, interpretError("read state", err)
	}
	return &ackgap.TransitionResult{Outcome: storekit.OutcomeOf(false, found, state, tp.To), Found: found, Previous: state}, nil
}

// dialect: MySQL binds with anonymous "?" in order.
var dialect = sqlbuild.Dialect{Placeholder: func(int) string { return "?" }}

// InboxVerdictTx implements [stores.Store.InboxVerdictTx]: the verdict was
// known at BeginInboxDeferred, so tx is not a duplicate.
func (s *Store) InboxVerdictTx(_ context.Context, tx *sql.Tx) (*stores.BeginInboxResult[*sql.Tx], error) {
	return storekit.VerdictNow(tx), nil
}

// QueueTransitionTx implements [stores.Store.QueueTransitionTx] at once,
// as storekit.QueueTransitionNow does, except that the rows of a
// transition that applied go in one multi-row INSERT (one round trip, not
// one per row). A key that exists fails that INSERT with 1062, which
// rolls back the statement alone; the rows then go through
// InsertOutboxManyTx, which tells duplicates from conflicts.
func (s *Store) QueueTransitionTx(ctx context.Context, tx *sql.Tx, p *stores.QueueTransitionParams) error {
	res, err := s.TransitionIfStateTx(ctx, tx, &p.Transition)
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return err
	}
	if res.Applied() {
		if err := s.insertOutboxAll(ctx, tx, p.Outbox); err != nil {
			return err
		}
	}
	if p.Ran != nil {
		p.Ran(res.Applied())
	}
	return nil
}

// insertOutboxAll inserts rows in one statement when none of their keys
// exists (the usual case), else as InsertOutboxManyTx does. Rows are
// validated first; two rows with one key and another payload are an
// idempotency conflict.
func (s *Store) insertOutboxAll(ctx context.Context, tx *sql.Tx, rows []ackgap.OutboxEntry) error {
	if len(rows) == 0 {
		return nil
	}
	mp := &stores.OutboxInsertManyParams{Rows: rows}
	plan, err := storekit.PlanOutboxMany(mp)
	if err != nil {
		return err
	}
	order := make([]int, len(plan.Rows)) // by key: one lock order for concurrent writers (see insertInboxMany)
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(a, b int) int {
		return strings.Compare(rows[plan.Rows[a]].IdempotencyKey, rows[plan.Rows[b]].IdempotencyKey)
	})
	var q strings.Builder
	q.WriteString(`INSERT INTO ` + s.names.Outbox + outboxInsertColumns)
	args := make([]any, 0, 10*len(plan.Rows))
	for j, o := range order {
		vals, err := outboxValues(&rows[plan.Rows[o]], plan.Hashes[o])
		if err != nil {
			return err
		}
		if j > 0 {
			q.WriteString(", ")
		}
		q.WriteString(outboxValuesRow)
		args = append(args, vals...)
	}
	_, err = tx.ExecContext(ctx, q.String(), args...)
	if isCode(err, erDupEntry) {
		_, err = s.InsertOutboxManyTx(ctx, tx, mp)
		return err
	}
	return interpretError("insert outbox rows", err)
}

// outboxValues returns the INSERT values of e: kind, idempotency_key,
// payload, payload_hash, headers, consumer, event_id, last_error,
// created_at, available_at.
func outboxValues(e *ackgap.OutboxEntry, hash []byte) ([]any, error) {
	headers := "{}"
	if e.Headers != nil {
		b, err := json.Marshal(e.Headers)
		if err != nil {
			return nil, fmt.Errorf("outbox headers: %w", err)
		}
		headers = string(b)
	}
	payload := e.Payload
	if payload == nil {
		payload = []byte{}
	}
	now := e.Now
	if now.IsZero() {
		now = time.Now()
	}
	available := e.AvailableAt
	if available.IsZero() {
		available = now
	}
	return []any{e.Kind, e.IdempotencyKey, payload, hash, headers, e.Consumer, e.EventID, "", now.UnixMicro(), available.UnixMicro()}, nil
}

const outboxInsertColumns = ` (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, last_error, created_at, available_at) VALUES `
const outboxValuesRow = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// QueueOutboxTx implements [stores.Store.QueueOutboxTx] at once: a plain
// INSERT; 1062 on the idempotency key means the row exists, and its hash
// tells a duplicate (nothing written, nil) from a conflict
// (storekit.IdempotencyConflict).
func (s *Store) QueueOutboxTx(ctx context.Context, tx *sql.Tx, p *ackgap.OutboxEntry) error {
	if err := p.Validate(); err != nil {
		return err
	}
	hash := stores.PayloadHash(p.Payload)
	vals, err := outboxValues(p, hash)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO `+s.names.Outbox+outboxInsertColumns+outboxValuesRow, vals...)
	if err == nil {
		return nil
	}
	if !isCode(err, erDupEntry) {
		return interpretError("insert outbox row", err)
	}
	var stored []byte
	if err := tx.QueryRowContext(ctx, `SELECT payload_hash FROM `+s.names.Outbox+` WHERE idempotency_key = ?`,
		p.IdempotencyKey).Scan(&stored); err != nil {
		return interpretError("read outbox row", err)
	}
	if !bytes.Equal(stored, hash) {
		return storekit.IdempotencyConflict(p.IdempotencyKey)
	}
	return nil
}

// ListOutbox implements [stores.OutboxStore.ListOutbox].
func (s *Store) ListOutbox(ctx context.Context, p *stores.OutboxListParams) (*stores.OutboxListResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = stores.OutboxListLimitDefault
	}
	rows, err := s.queryOutbox(ctx, "list outbox", `SELECT `+outboxColumns+` FROM `+s.names.Outbox+`
WHERE (? = '' OR kind = ?) AND (? = '' OR state = ?) ORDER BY id LIMIT ?`, p.Kind, p.Kind, string(p.State), string(p.State), limit)
	if err != nil {
		return nil, err
	}
	return &stores.OutboxListResult{Rows: rows}, nil
}

// PruneInbox implements [stores.Operator.PruneInbox]: one DELETE ...
// ORDER BY received_at LIMIT n (MySQL allows no LIMIT in an IN subquery).
func (s *Store) PruneInbox(ctx context.Context, p *stores.PruneInboxParams) (*stores.PruneInboxResult, error) {
	if p.Before.IsZero() {
		return nil, errors.New("prune inbox: Before is zero")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = stores.PruneLimitDefault
	}
	n, err := s.execWrite(ctx, "prune inbox", `DELETE FROM `+s.names.Inbox+` WHERE received_at < ? AND (? = '' OR consumer = ?)
ORDER BY received_at LIMIT ?`, p.Before.UnixMicro(), p.Consumer, p.Consumer, limit)
	if err != nil {
		return nil, err
	}
	return &stores.PruneInboxResult{Deleted: n}, nil
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UnixMicro()
}

// placeholders returns n "?" joined by commas.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// anys returns v as []any.
func anys[T any](v []T) []any {
	out := make([]any, len(v))
	for i := range v {
		out[i] = v[i]
	}
	return out
}
