package pgxstore

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
	"github.com/ackgap/ackgap/stores/storekit"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Config configures a [Store]. The zero value is ready to use.
type Config struct {
	// Schema holds ackgap's tables. Default "": unqualified names, resolved
	// by the connection's search_path.
	Schema string
	// TablePrefix starts every table and index name. Default
	// stores.TablePrefixDefault ("ackgap_").
	TablePrefix string
	// NotifyInterval coalesces the pg_notify that wakes outbox relays after
	// a commit that wrote outbox rows: at most one per interval per Store
	// (the first commit of an interval carries it in its COMMIT's round
	// trip; later ones arm one more, sent on a pooled connection at the
	// interval's end). What it costs: a relay learns of a row up to
	// NotifyInterval (plus a round trip) after its commit, instead of at
	// once. What it saves: a notification (a statement, and NOTIFY's
	// queue work in PostgreSQL) per commit, and a waking of every listening
	// relay per commit. A tiny interval (1 ns) notifies with every commit,
	// as before. Default NotifyIntervalDefault (10 ms); must not be
	// negative.
	NotifyInterval time.Duration
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.TablePrefix == "" {
		c.TablePrefix = stores.TablePrefixDefault
	}
	if c.NotifyInterval == 0 {
		c.NotifyInterval = NotifyIntervalDefault
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Schema != "" {
		errs = append(errs, storekit.ValidIdentifier("Schema", c.Schema))
	}
	// The longest name built from the prefix is prefix+"inbox_received_at_idx".
	errs = append(errs, storekit.ValidIdentifier("TablePrefix", c.TablePrefix+"inbox_received_at_idx"))
	if c.NotifyInterval < 0 {
		errs = append(errs, fmt.Errorf("NotifyInterval is %s, must not be negative", c.NotifyInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// Store is the PostgreSQL [stores.Store]. It is safe for concurrent use.
type Store struct {
	pool  *pgxpool.Pool
	cfg   Config
	names sqlbuild.Names
	q     queries
	// channel is the NOTIFY channel of the outbox table, resolved once
	// (see outboxChannel).
	channel atomic.Pointer[string]
	// transitions keeps the text of queued transitions by shape
	// (transitionShape -> string); transitionsCount bounds it.
	transitions      sync.Map
	transitionsCount atomic.Int64
	// ranTransitions holds the text of every queued transition that ran
	// once without error (string -> struct{}): its table and columns
	// exist, so it can ride behind a held SAVEPOINT (see savepointCut).
	// Bounded as transitions is.
	ranTransitions sync.Map
	// notifier coalesces the relays' wake-ups (Config.NotifyInterval).
	notifier *notifier
}

var (
	_ stores.Store[pgx.Tx] = (*Store)(nil)
)

type queries struct {
	inboxInsert, inboxHash, outboxInsert, outboxExisting, outboxQueued, outboxQueuedMany, prune string
	// progress upserts the watermarks of a transaction (migration 005):
	// $1 consumer, $2 topics, $3 partitions, $4 watermarks, one row per
	// partition; a stored watermark never moves back.
	progress string
}

// New returns a Store on pool; cfg nil means all defaults. It does not
// touch the database: call Migrate (or apply [Migrations] yourself) first.
// It returns an error wrapping "invalid config" for a bad Schema or
// TablePrefix.
func New(pool *pgxpool.Pool, cfg *Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("invalid config: pool is nil")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	n := sqlbuild.TableNames(c.Schema, c.TablePrefix)
	s := &Store{pool: pool, cfg: c, names: n, q: queries{
		inboxInsert: `INSERT INTO ` + n.Inbox + ` (consumer, event_id, payload_hash, received_at, trace_parent)
VALUES ($1, $2, $3, COALESCE($4::timestamptz, now()), $5) ON CONFLICT DO NOTHING`,
		progress: `INSERT INTO ` + n.Progress + ` AS p (consumer, topic, partition, watermark, updated_at)
SELECT $1, u.topic, u.partition, u.watermark, now() FROM unnest($2::text[], $3::int[], $4::bigint[]) AS u(topic, partition, watermark)
ON CONFLICT (consumer, topic, partition) DO UPDATE SET watermark = GREATEST(p.watermark, EXCLUDED.watermark), updated_at = EXCLUDED.updated_at`,
		inboxHash: `SELECT payload_hash, trace_parent FROM ` + n.Inbox + ` WHERE consumer = $1 AND event_id = $2`,
		outboxInsert: `INSERT INTO ` + n.Outbox + ` (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now()), COALESCE($9::timestamptz, $8::timestamptz, now()))
ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
		outboxExisting: `SELECT id, payload_hash FROM ` + n.Outbox + ` WHERE idempotency_key = $1`,
		// outboxQueued inserts a queued row and checks its key in one
		// statement, so that it can run pipelined ahead of COMMIT: a row
		// with the same key and payload is left alone (the WHERE is false;
		// the row is only locked), one with another payload makes the
		// WHERE divide by zero, which aborts the transaction before the
		// COMMIT runs. ON CONFLICT DO UPDATE sees the newest committed
		// version of a conflicting row, as the separate SELECT of
		// insertOutbox does.
		outboxQueued: `INSERT INTO ` + n.Outbox + ` AS o (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now()), COALESCE($9::timestamptz, $8::timestamptz, now()))
ON CONFLICT (idempotency_key) DO UPDATE SET kind = o.kind WHERE 1 / (o.payload_hash = excluded.payload_hash)::int = 0`,
		// outboxQueuedMany is outboxQueued for several rows queued one
		// after the other (two effects of one event): one statement instead
		// of one per row. Their keys are unique (QueueOutboxTx folds a
		// repeated key), as ON CONFLICT DO UPDATE requires; key order keeps
		// concurrent inserts of shared keys from deadlocking.
		outboxQueuedMany: `INSERT INTO ` + n.Outbox + ` AS o (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
SELECT u.kind, u.key, u.payload, u.hash, u.headers::jsonb, u.consumer, u.event_id, COALESCE(u.created, now()), COALESCE(u.available, u.created, now())
FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[])
    AS u(kind, key, payload, hash, headers, consumer, event_id, created, available)
ORDER BY u.key
ON CONFLICT (idempotency_key) DO UPDATE SET kind = o.kind WHERE 1 / (o.payload_hash = excluded.payload_hash)::int = 0`,
		prune: `DELETE FROM ` + n.Inbox + ` WHERE (consumer, event_id) IN (
SELECT consumer, event_id FROM ` + n.Inbox + ` WHERE received_at < $1 AND ($2 = '' OR consumer = $2)
ORDER BY received_at LIMIT $3 FOR UPDATE SKIP LOCKED)`,
	}}
	s.notifier = &notifier{interval: c.NotifyInterval, send: s.NotifyOutbox}
	return s, nil
}

// TxFromContext returns the pgx.Tx that the inbox middleware opened for the
// message whose context is ctx, and false outside a handler.
func TxFromContext(ctx context.Context) (pgx.Tx, bool) {
	return ackgap.TxFromContext[pgx.Tx](ctx)
}

// BeginInboxDeferred implements [stores.Store.BeginInboxDeferred]: it
// takes a connection from the pool and sends nothing; the result holds the
// transaction, its verdict pending. The transaction's
// BEGIN and inbox insert go in one round trip with its first Exec that has
// arguments (a guarded transition's UPDATE), behind them; any other
// statement is sent right after them; [Store.InboxVerdictTx] sends them
// alone (one round trip: BEGIN and INSERT ... ON CONFLICT DO NOTHING; a
// duplicate takes a second: ROLLBACK and a SELECT of the stored payload
// hash and trace context, a statement of its own, so under READ COMMITTED
// it sees a row a concurrent delivery committed while the INSERT waited).
// The transaction queues the rows of [Store.QueueOutboxTx] and sends them
// ahead of its next statement or with its COMMIT, in the same round trip.
// It returns an error wrapping
// ackgap.ErrStoreUnavailable when no connection can be had.
func (s *Store) BeginInboxDeferred(ctx context.Context, p *stores.BeginInboxParams) (*stores.BeginInboxResult[pgx.Tx], error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, acquireError(err)
	}
	pending := *p
	t := &inboxTx{conn: conn, pgConn: conn.Conn(), store: s, pending: &pending}
	if p.Progress != nil {
		t.consumer, t.progress = p.Consumer, []stores.Progress{*p.Progress}
	}
	return &stores.BeginInboxResult[pgx.Tx]{Tx: t}, nil
}

// InboxVerdictTx implements [stores.Store.InboxVerdictTx]. tx must
// come from BeginInboxDeferred of this store; anything else
// returns an error.
func (s *Store) InboxVerdictTx(ctx context.Context, tx pgx.Tx) (*stores.BeginInboxResult[pgx.Tx], error) {
	t, ok := tx.(*inboxTx)
	if !ok || t.store != s {
		return nil, fmt.Errorf("pgxstore: inbox verdict: %T is not a transaction of this store's BeginInboxDeferred", tx)
	}
	if t.verdict == nil && t.err == nil {
		t.resolveInbox(ctx)
	}
	switch {
	case t.err != nil:
		return nil, t.err
	case t.verdict == nil:
		return nil, fmt.Errorf("pgxstore: inbox verdict: %w", pgx.ErrTxClosed)
	}
	return t.verdict, nil
}

// CommitTx implements [stores.Store.CommitTx].
func (s *Store) CommitTx(ctx context.Context, tx pgx.Tx) error {
	return interpretError("commit", tx.Commit(ctx))
}

// RollbackTx implements [stores.Store.RollbackTx].
func (s *Store) RollbackTx(ctx context.Context, tx pgx.Tx) error {
	err := tx.Rollback(ctx)
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return interpretError("rollback", err)
}

// TransitionIfStateTx implements [stores.Store.TransitionIfStateTx]: one
// UPDATE ... WHERE key = $k AND state IN (from...); only when it changed
// nothing, a SELECT of the current state to tell already applied from
// refused.
func (s *Store) TransitionIfStateTx(ctx context.Context, tx pgx.Tx, p *ackgap.Transition) (*ackgap.TransitionResult, error) {
	tp := p.WithDefaults()
	if err := tp.Validate(); err != nil {
		return nil, err
	}
	update, args, current, currentArgs := sqlbuild.Transition(sqlbuild.Postgres, &tp)
	tag, err := tx.Exec(ctx, update, args...)
	if err != nil {
		return nil, interpretError("transition", err)
	}
	if tag.RowsAffected() > 0 {
		return &ackgap.TransitionResult{Outcome: ackgap.TransitionApplied, Found: true, Previous: storekit.AppliedFrom(tp.From)}, nil
	}
	var state string
	err = tx.QueryRow(ctx, current, currentArgs...).Scan(&state)
	found := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, interpretError("read state", err)
	}
	return &ackgap.TransitionResult{Outcome: storekit.OutcomeOf(false, found, state, tp.To), Found: found, Previous: state}, nil
}

// insertOutbox inserts p in tx at once: INSERT ... ON CONFLICT DO NOTHING
// RETURNING id; when it returns nothing the key exists, and a SELECT of
// the stored payload hash tells a duplicate (nothing written, nil) from a
// conflict (storekit.IdempotencyConflict).
func (s *Store) insertOutbox(ctx context.Context, tx pgx.Tx, p *ackgap.OutboxEntry) error {
	args, hash, err := outboxArgs(p)
	if err != nil {
		return err
	}
	var id int64
	err = tx.QueryRow(ctx, s.q.outboxInsert, args...).Scan(&id)
	if err == nil {
		if t, ok := tx.(*inboxTx); ok && t.store == s && dueSoon(time.Now(), *p) {
			t.notify = true
		}
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return interpretError("insert outbox row", err)
	}
	var stored []byte
	if err := tx.QueryRow(ctx, s.q.outboxExisting, p.IdempotencyKey).Scan(&id, &stored); err != nil {
		return interpretError("read outbox row", err)
	}
	if !bytes.Equal(stored, hash) {
		return storekit.IdempotencyConflict(p.IdempotencyKey)
	}
	return nil
}

// QueueOutboxTx implements [stores.Store.QueueOutboxTx]. On a
// transaction from BeginInboxDeferred it validates p and holds the row back: it is
// sent, pipelined, ahead of the transaction's next statement or with its
// COMMIT, in the same round trip; rows queued one after the other go in
// one statement (queries.outboxQueuedMany), and a key queued twice before
// it was sent is written once (same payload) or fails this call with
// storekit.IdempotencyConflict (another payload). On any other pgx.Tx it inserts the row
// at once (insertOutbox). A queued row whose key exists with
// another payload fails that statement (the transaction is then aborted:
// roll it back), or the commit (which rolls it back), with
// storekit.IdempotencyConflict.
func (s *Store) QueueOutboxTx(ctx context.Context, tx pgx.Tx, p *ackgap.OutboxEntry) error {
	t, ok := tx.(*inboxTx)
	if !ok || t.store != s || t.ended {
		return s.insertOutbox(ctx, tx, p)
	}
	args, hash, err := outboxArgs(p)
	if err != nil {
		return err
	}
	// A key queued already and not sent yet: the same row again is a
	// duplicate; another payload, a conflict at once.
	for _, q := range t.queued {
		if q.row() && q.key == p.IdempotencyKey {
			if !bytes.Equal(q.args[3].([]byte), hash) {
				return storekit.IdempotencyConflict(p.IdempotencyKey)
			}
			return nil
		}
	}
	t.queued = append(t.queued, queuedRow{key: p.IdempotencyKey, args: args})
	if dueSoon(time.Now(), *p) {
		t.notify = true
	}
	return nil
}

// dueSoon reports whether a relay could claim one of rows within a
// notification interval of now: a row with no AvailableAt, or one due by
// then. A commit that wrote only rows due later (held for direct dispatch,
// or delayed) wakes no relay: a claim then would find nothing.
func dueSoon(now time.Time, rows ...ackgap.OutboxEntry) bool {
	for i := range rows {
		if rows[i].AvailableAt.IsZero() || rows[i].AvailableAt.Before(now.Add(time.Second)) {
			return true
		}
	}
	return false
}

// outboxArgs validates p and returns the arguments of the outbox inserts
// (outboxInsert, outboxQueued) and the payload's hash.
func outboxArgs(p *ackgap.OutboxEntry) (args []any, hash []byte, err error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	headers, err := encodeHeaders(p.Headers)
	if err != nil {
		return nil, nil, err
	}
	hash = stores.PayloadHash(p.Payload)
	payload := p.Payload
	if payload == nil {
		payload = []byte{}
	}
	return []any{p.Kind, p.IdempotencyKey, payload, hash, headers, p.Consumer, p.EventID, nullTime(p.Now), nullTime(p.AvailableAt)}, hash, nil
}

// ListOutbox implements [stores.OutboxStore.ListOutbox].
func (s *Store) ListOutbox(ctx context.Context, p *stores.OutboxListParams) (*stores.OutboxListResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = stores.OutboxListLimitDefault
	}
	rows, err := s.pool.Query(ctx, `SELECT id, kind, idempotency_key, payload, headers, consumer, event_id, state,
attempts, last_error, created_at, available_at FROM `+s.names.Outbox+`
WHERE ($1 = '' OR kind = $1) AND ($2 = '' OR state = $2) ORDER BY id LIMIT $3`, p.Kind, string(p.State), limit)
	if err != nil {
		return nil, interpretError("list outbox", err)
	}
	defer rows.Close()
	res := &stores.OutboxListResult{}
	for rows.Next() {
		var r stores.OutboxRow
		var headers []byte
		var state string
		if err := rows.Scan(&r.ID, &r.Kind, &r.IdempotencyKey, &r.Payload, &headers, &r.Consumer, &r.EventID,
			&state, &r.Attempts, &r.LastError, &r.Now, &r.AvailableAt); err != nil {
			return nil, interpretError("list outbox", err)
		}
		r.State = stores.OutboxState(state)
		if err := json.Unmarshal(headers, &r.Headers); err != nil {
			return nil, fmt.Errorf("outbox row %d: headers: %w", r.ID, err)
		}
		res.Rows = append(res.Rows, r)
	}
	return res, interpretError("list outbox", rows.Err())
}

// PruneInbox implements [stores.Operator.PruneInbox]; rows locked by
// another pruner are skipped (FOR UPDATE SKIP LOCKED).
func (s *Store) PruneInbox(ctx context.Context, p *stores.PruneInboxParams) (*stores.PruneInboxResult, error) {
	if p.Before.IsZero() {
		return nil, errors.New("prune inbox: Before is zero")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = stores.PruneLimitDefault
	}
	tag, err := s.pool.Exec(ctx, s.q.prune, p.Before, p.Consumer, limit)
	if err != nil {
		return nil, interpretError("prune inbox", err)
	}
	return &stores.PruneInboxResult{Deleted: tag.RowsAffected()}, nil
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func encodeHeaders(h map[string]string) ([]byte, error) {
	if h == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("outbox headers: %w", err)
	}
	return b, nil
}

// acquireError translates a failure to take a connection from the pool.
// Whatever the cause (the pool closed, a connect error, or no connection
// free before ctx's deadline: a handler timeout spent waiting behind busy
// connections), the database could not be had, not the message was bad:
// it wraps ackgap.ErrStoreUnavailable, so the message is redelivered, never
// dead-lettered.
func acquireError(err error) error {
	return fmt.Errorf("pgxstore: begin: acquire connection: %w: %w", ackgap.ErrStoreUnavailable, err)
}

// interpretError is the one place driver errors are translated: errors
// that mean the database is busy or unreachable wrap
// ackgap.ErrStoreUnavailable; errors the database raised because of the
// data are permanent (ackgap.ErrInvalidData). See docs/errors.md.
func interpretError(op string, err error) error {
	if err == nil {
		return nil
	}
	if misconfigured(err) {
		return storekit.Misconfigured("pgxstore: "+op, err)
	}
	if unavailable(err) {
		return fmt.Errorf("pgxstore: %s: %w: %w", op, ackgap.ErrStoreUnavailable, err)
	}
	if invalidData(err) {
		return ackgap.Permanent(ackgap.ReasonInvalidData, fmt.Errorf("pgxstore: %s: %w: %w", op, ackgap.ErrInvalidData, err))
	}
	return fmt.Errorf("pgxstore: %s: %w", op, err)
}

// misconfigured: the database is not set up for the code that runs on it,
// a deploy mistake rather than a bad message: a table or column missing
// (42P01 undefined_table, 42703 undefined_column: a schema never migrated
// or behind the code, ackgap's or the handler's own), a schema or database
// missing (3F000 invalid_schema_name, 3D000 invalid_catalog_name),
// insufficient_privilege 42501, or an authorization failure 28xxx. The
// message is redelivered until the deploy is fixed (docs/errors.md).
func misconfigured(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	switch pgErr.Code {
	case "42P01", "42703", "3F000", "3D000", "42501":
		return true
	}
	return pgErr.Code[:2] == "28" // invalid_authorization_specification, invalid_password
}

// unavailable: the database is busy or unreachable (docs/errors.md).
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if len(pgErr.Code) != 5 {
			return false
		}
		switch pgErr.Code[:2] {
		case "08", // connection exception
			"40", // transaction rollback: serialization failure, deadlock detected
			"53", // insufficient resources: disk full, out of memory, too many connections
			"58": // system error: I/O error
			return true
		}
		switch pgErr.Code {
		case "55P03", // lock_not_available (lock_timeout, NOWAIT)
			"55006",                            // object_in_use
			"57014",                            // query_canceled (statement_timeout, a cancel request)
			"57P01", "57P02", "57P03", "57P05": // admin_shutdown, crash_shutdown, cannot_connect_now, idle_session_timeout
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, puddle.ErrClosedPool) || pgconn.SafeToRetry(err) ||
		// A deadline spent waiting for a lock or the server (pgconn wraps
		// the context's error): the database was too slow, not the message.
		(pgconn.Timeout(err) && errors.Is(err, context.DeadlineExceeded))
}

// invalidData: the database refused the data (docs/errors.md).
func invalidData(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	switch {
	case pgErr.Code[:2] == "22": // data exception: 22021 invalid encoding, 22001 too long, 22003 out of range, ...
		return true
	case pgErr.Code == "23514", pgErr.Code == "23502": // check_violation, not_null_violation
		return true
	}
	return false
}
