package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
	"github.com/ackgap/ackgap/stores/storekit"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Defaults of [Config].
const (
	// BusyTimeoutDefault is how long a transaction waits for SQLite's write
	// lock before failing with SQLITE_BUSY.
	BusyTimeoutDefault = 5 * time.Second
	// MaxOpenConnsDefault caps the pool: one writer at a time plus readers.
	MaxOpenConnsDefault = 4
)

// Config configures a [Store]. The zero value is ready to use.
type Config struct {
	// TablePrefix starts every table and index name. Default
	// stores.TablePrefixDefault ("ackgap_").
	TablePrefix string
	// BusyTimeout is SQLite's busy_timeout, used by Open. Default
	// BusyTimeoutDefault (5 s); at least 1 ms.
	BusyTimeout time.Duration
	// MaxOpenConns caps the connections Open keeps. Default
	// MaxOpenConnsDefault (4).
	MaxOpenConns int
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.TablePrefix == "" {
		c.TablePrefix = stores.TablePrefixDefault
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = BusyTimeoutDefault
	}
	if c.MaxOpenConns == 0 {
		c.MaxOpenConns = MaxOpenConnsDefault
	}
	return c
}

func (c Config) validate() error {
	errs := []error{storekit.ValidIdentifier("TablePrefix", c.TablePrefix+"inbox_received_at_idx")}
	if c.BusyTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("BusyTimeout is %s, must be at least 1ms", c.BusyTimeout))
	}
	if c.MaxOpenConns < 1 {
		errs = append(errs, fmt.Errorf("MaxOpenConns is %d, must be at least 1", c.MaxOpenConns))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// Store is the SQLite [stores.Store]. It is safe for concurrent use.
type Store struct {
	db     *sql.DB
	ownsDB bool
	names  sqlbuild.Names
	q      queries
	stmts  *stmtCache
}

var _ stores.Store[*sql.Tx] = (*Store)(nil)

type queries struct {
	inboxInsert, inboxHash, outboxInsert, outboxExisting, prune, list string
	// progress upserts one partition's watermark (migration 004); a stored
	// watermark never moves back.
	progress string
}

// DSN returns the modernc.org/sqlite data source name Open uses for the
// database file at path: WAL, synchronous NORMAL, busy_timeout, foreign
// keys on, and _txlock=immediate.
func DSN(path string, busyTimeout time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the SQLite database file at path with
// [DSN] and returns a Store that owns it: Close closes it. cfg nil means
// all defaults. It returns an error wrapping "invalid config", or wrapping
// ackgap.ErrStoreUnavailable when the file cannot be opened.
func Open(ctx context.Context, path string, cfg *Config) (*Store, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("invalid config: path %q must be a file path without ? or #", path)
	}
	db, err := sql.Open("sqlite", DSN(path, c.BusyTimeout))
	if err != nil {
		return nil, interpretError("open", err)
	}
	db.SetMaxOpenConns(c.MaxOpenConns)
	db.SetMaxIdleConns(c.MaxOpenConns)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, interpretError("open", err)
	}
	s := newStore(db, c)
	s.ownsDB = true
	return s, nil
}

// New returns a Store on a *sql.DB the caller opened with the "sqlite"
// driver and owns. The DSN must set a busy timeout and _txlock=immediate
// (see [DSN]); without them concurrent deliveries fail with SQLITE_BUSY.
// cfg nil means all defaults; BusyTimeout and MaxOpenConns are not used.
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
	n := sqlbuild.TableNames("", c.TablePrefix)
	s := &Store{db: db, names: n, q: queries{
		inboxInsert: `INSERT INTO ` + n.Inbox + ` (consumer, event_id, payload_hash, received_at, trace_parent)
VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING`,
		progress: `INSERT INTO ` + n.Progress + ` (consumer, topic, partition, watermark, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (consumer, topic, partition) DO UPDATE SET watermark = MAX(watermark, excluded.watermark), updated_at = excluded.updated_at`,
		inboxHash: `SELECT payload_hash, trace_parent FROM ` + n.Inbox + ` WHERE consumer = ?1 AND event_id = ?2`,
		outboxInsert: `INSERT INTO ` + n.Outbox + ` (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
		outboxExisting: `SELECT id, payload_hash FROM ` + n.Outbox + ` WHERE idempotency_key = ?1`,
		prune: `DELETE FROM ` + n.Inbox + ` WHERE (consumer, event_id) IN (
SELECT consumer, event_id FROM ` + n.Inbox + ` WHERE received_at < ?1 AND (?2 = '' OR consumer = ?2)
ORDER BY received_at LIMIT ?3)`,
		list: `SELECT id, kind, idempotency_key, payload, headers, consumer, event_id, state,
attempts, last_error, created_at, available_at FROM ` + n.Outbox + `
WHERE (?1 = '' OR kind = ?1) AND (?2 = '' OR state = ?2) ORDER BY id LIMIT ?3`,
	}}
	s.stmts = newStmtCache(db, s.q.inboxInsert, s.q.inboxHash, s.q.outboxInsert, s.q.outboxExisting)
	return s
}

// DB returns the underlying database, for the application's own tables.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the store's prepared statements, and the database if Open
// opened it; it is safe to call twice.
func (s *Store) Close() error {
	err := s.stmts.close()
	if !s.ownsDB {
		return err
	}
	return errors.Join(err, s.db.Close())
}

// TxFromContext returns the *sql.Tx that the inbox middleware opened for
// the message whose context is ctx, and false outside a handler.
func TxFromContext(ctx context.Context) (*sql.Tx, bool) {
	return ackgap.TxFromContext[*sql.Tx](ctx)
}

// BeginInboxDeferred implements [stores.Store.BeginInboxDeferred] at
// once: SQLite gains nothing from deferring (no network round trip). BEGIN
// IMMEDIATE, then INSERT ... ON CONFLICT DO NOTHING into the inbox. The
// store's statements are prepared once per connection and kept (the first
// time here, before the transaction begins).
func (s *Store) BeginInboxDeferred(ctx context.Context, p *stores.BeginInboxParams) (*stores.BeginInboxResult[*sql.Tx], error) {
	s.stmts.prepare(ctx)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, beginError(err)
	}
	var traceParent any
	if p.TraceParent != "" {
		traceParent = p.TraceParent
	}
	res, err := s.txExec(ctx, tx, s.q.inboxInsert, p.Consumer, p.EventID, p.PayloadHash, micros(p.Now), traceParent)
	if err != nil {
		_ = tx.Rollback()
		return nil, interpretError("insert inbox row", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		if p.Progress != nil {
			if err := s.writeProgress(ctx, tx, p.Consumer, []stores.Progress{*p.Progress}); err != nil {
				_ = tx.Rollback()
				return nil, err
			}
		}
		return &stores.BeginInboxResult[*sql.Tx]{Tx: tx}, nil
	}
	var stored []byte
	var storedTrace sql.NullString
	err = s.txQueryRow(ctx, tx, s.q.inboxHash, p.Consumer, p.EventID).Scan(&stored, &storedTrace)
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

// writeProgress upserts the watermarks ps of consumer in tx (SQLite
// serialises writers, so writing them before the handler costs no
// concurrency).
func (s *Store) writeProgress(ctx context.Context, tx *sql.Tx, consumer string, ps []stores.Progress) error {
	now := time.Now().UnixMicro()
	for _, p := range ps {
		if _, err := s.txExec(ctx, tx, s.q.progress, consumer, p.Topic, p.Partition, p.Watermark, now); err != nil {
			return interpretError("write progress row", err)
		}
	}
	return nil
}

// CommitTx implements [stores.Store.CommitTx].
func (s *Store) CommitTx(_ context.Context, tx *sql.Tx) error {
	return interpretError("commit", tx.Commit())
}

// RollbackTx implements [stores.Store.RollbackTx].
func (s *Store) RollbackTx(_ context.Context, tx *sql.Tx) error {
	err := tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return interpretError("rollback", err)
}

// TransitionIfStateTx implements [stores.Store.TransitionIfStateTx]: one
// UPDATE ... WHERE key = ?k AND state IN (from...); only when it changed
// nothing, a SELECT of the current state to tell already applied from
// refused. Schema must be empty or name an attached database.
func (s *Store) TransitionIfStateTx(ctx context.Context, tx *sql.Tx, p *ackgap.Transition) (*ackgap.TransitionResult, error) {
	tp := p.WithDefaults()
	if err := tp.Validate(); err != nil {
		return nil, err
	}
	update, args, current, currentArgs := sqlbuild.Transition(sqlbuild.SQLite, &tp)
	res, err := s.txExec(ctx, tx, update, args...)
	if err != nil {
		return nil, interpretError("transition", err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return &ackgap.TransitionResult{Outcome: ackgap.TransitionApplied, Found: true, Previous: storekit.AppliedFrom(tp.From)}, nil
	}
	var state string
	err = s.txQueryRow(ctx, tx, current, currentArgs...).Scan(&state)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, interpretError("read state", err)
	}
	return &ackgap.TransitionResult{Outcome: storekit.OutcomeOf(false, found, state, tp.To), Found: found, Previous: state}, nil
}

// InboxVerdictTx implements [stores.Store.InboxVerdictTx]: the verdict was
// known at BeginInboxDeferred, so tx is not a duplicate.
func (s *Store) InboxVerdictTx(_ context.Context, tx *sql.Tx) (*stores.BeginInboxResult[*sql.Tx], error) {
	return storekit.VerdictNow(tx), nil
}

// QueueTransitionTx implements [stores.Store.QueueTransitionTx] at once
// (storekit.QueueTransitionNow).
func (s *Store) QueueTransitionTx(ctx context.Context, tx *sql.Tx, p *stores.QueueTransitionParams) error {
	return storekit.QueueTransitionNow[*sql.Tx](ctx, s, tx, p)
}

// QueueOutboxTx implements [stores.Store.QueueOutboxTx] at once: an
// INSERT ... ON CONFLICT DO NOTHING RETURNING id; when it returns nothing
// the key exists, and the stored payload hash tells a duplicate (nothing
// written, nil) from a conflict (storekit.IdempotencyConflict).
func (s *Store) QueueOutboxTx(ctx context.Context, tx *sql.Tx, p *ackgap.OutboxEntry) error {
	if err := p.Validate(); err != nil {
		return err
	}
	headers := "{}"
	if p.Headers != nil {
		b, err := json.Marshal(p.Headers)
		if err != nil {
			return fmt.Errorf("outbox headers: %w", err)
		}
		headers = string(b)
	}
	hash := stores.PayloadHash(p.Payload)
	payload := p.Payload
	if payload == nil {
		payload = []byte{}
	}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	available := p.AvailableAt
	if available.IsZero() {
		available = now
	}
	var id int64
	err := s.txQueryRow(ctx, tx, s.q.outboxInsert, p.Kind, p.IdempotencyKey, payload, hash, headers,
		p.Consumer, p.EventID, now.UnixMicro(), available.UnixMicro()).Scan(&id)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return interpretError("insert outbox row", err)
	}
	var stored []byte
	if err := s.txQueryRow(ctx, tx, s.q.outboxExisting, p.IdempotencyKey).Scan(&id, &stored); err != nil {
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
	rows, err := s.db.QueryContext(ctx, s.q.list, p.Kind, string(p.State), limit)
	if err != nil {
		return nil, interpretError("list outbox", err)
	}
	defer rows.Close()
	res := &stores.OutboxListResult{}
	for rows.Next() {
		var r stores.OutboxRow
		var headers, state string
		var created, available int64
		if err := rows.Scan(&r.ID, &r.Kind, &r.IdempotencyKey, &r.Payload, &headers, &r.Consumer, &r.EventID,
			&state, &r.Attempts, &r.LastError, &created, &available); err != nil {
			return nil, interpretError("list outbox", err)
		}
		r.State = stores.OutboxState(state)
		r.Now = time.UnixMicro(created)
		r.AvailableAt = time.UnixMicro(available)
		if err := json.Unmarshal([]byte(headers), &r.Headers); err != nil {
			return nil, fmt.Errorf("outbox row %d: headers: %w", r.ID, err)
		}
		res.Rows = append(res.Rows, r)
	}
	return res, interpretError("list outbox", rows.Err())
}

// PruneInbox implements [stores.Operator.PruneInbox]. SQLite runs one
// writer at a time, so concurrent pruners take turns.
func (s *Store) PruneInbox(ctx context.Context, p *stores.PruneInboxParams) (*stores.PruneInboxResult, error) {
	if p.Before.IsZero() {
		return nil, errors.New("prune inbox: Before is zero")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = stores.PruneLimitDefault
	}
	res, err := s.db.ExecContext(ctx, s.q.prune, p.Before.UnixMicro(), p.Consumer, limit)
	if err != nil {
		return nil, interpretError("prune inbox", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, interpretError("prune inbox", err)
	}
	return &stores.PruneInboxResult{Deleted: n}, nil
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UnixMicro()
}

// beginError translates a failure to begin a transaction: no connection
// before ctx's deadline, the write lock busy past busy_timeout, a closed
// database. The database could not be had, the message was fine: it wraps
// ackgap.ErrStoreUnavailable, so the message is redelivered, never
// dead-lettered.
func beginError(err error) error {
	return fmt.Errorf("sqlitestore: begin: %w: %w", ackgap.ErrStoreUnavailable, err)
}

// interpretError is the one place driver errors are translated: errors
// that mean the database cannot be used now wrap ackgap.ErrStoreUnavailable.
func interpretError(op string, err error) error {
	if err == nil {
		return nil
	}
	if misconfigured(err) {
		return storekit.Misconfigured("sqlitestore: "+op, err)
	}
	if unavailable(err) {
		return fmt.Errorf("sqlitestore: %s: %w: %w", op, ackgap.ErrStoreUnavailable, err)
	}
	if invalidData(err) {
		return ackgap.Permanent(ackgap.ReasonInvalidData, fmt.Errorf("sqlitestore: %s: %w: %w", op, ackgap.ErrInvalidData, err))
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, err)
}

// misconfigured: the database is not set up for the code that runs on it,
// a deploy mistake rather than a bad message: SQLITE_ERROR for a table or
// column that does not exist (a file never migrated or behind the code,
// ackgap's tables or the handler's own; SQLite has no code of its own for
// it, so the message decides), and SQLITE_AUTH. SQLITE_READONLY and
// SQLITE_CANTOPEN are in [unavailable]. The message is redelivered until
// the deploy is fixed (docs/errors.md).
func misconfigured(err error) bool {
	var sqlErr *sqlite.Error
	if !errors.As(err, &sqlErr) {
		return false
	}
	switch sqlErr.Code() & 0xff {
	case sqlite3.SQLITE_AUTH:
		return true
	case sqlite3.SQLITE_ERROR:
		msg := sqlErr.Error()
		return strings.Contains(msg, "no such table") || strings.Contains(msg, "no such column")
	}
	return false
}

// invalidData: SQLite refused the data (docs/errors.md): a CHECK or NOT
// NULL constraint, a string or blob over SQLITE_MAX_LENGTH (SQLITE_TOOBIG),
// a datatype mismatch (SQLITE_MISMATCH, e.g. a STRICT table).
func invalidData(err error) bool {
	var sqlErr *sqlite.Error
	if !errors.As(err, &sqlErr) {
		return false
	}
	switch sqlErr.Code() {
	case sqlite3.SQLITE_CONSTRAINT_CHECK, sqlite3.SQLITE_CONSTRAINT_NOTNULL, sqlite3.SQLITE_CONSTRAINT_DATATYPE:
		return true
	}
	switch sqlErr.Code() & 0xff {
	case sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH:
		return true
	}
	return false
}

func unavailable(err error) bool {
	var sqlErr *sqlite.Error
	if errors.As(err, &sqlErr) {
		switch sqlErr.Code() & 0xff { // primary result code
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return true
		}
		return false
	}
	// database/sql does not export its "database is closed" error.
	return errors.Is(err, sql.ErrConnDone) || strings.Contains(err.Error(), "sql: database is closed")
}
