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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
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
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.TablePrefix == "" {
		c.TablePrefix = stores.TablePrefixDefault
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Schema != "" {
		errs = append(errs, stores.ValidIdentifier("Schema", c.Schema))
	}
	// The longest name built from the prefix is prefix+"inbox_received_at_idx".
	errs = append(errs, stores.ValidIdentifier("TablePrefix", c.TablePrefix+"inbox_received_at_idx"))
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
}

var _ stores.Store[pgx.Tx] = (*Store)(nil)

type queries struct {
	inboxInsert, inboxHash, outboxInsert, outboxExisting, prune string
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
	return &Store{pool: pool, cfg: c, names: n, q: queries{
		inboxInsert: `INSERT INTO ` + n.Inbox + ` (consumer, event_id, payload_hash, received_at)
VALUES ($1, $2, $3, COALESCE($4::timestamptz, now())) ON CONFLICT DO NOTHING`,
		inboxHash: `SELECT payload_hash FROM ` + n.Inbox + ` WHERE consumer = $1 AND event_id = $2`,
		outboxInsert: `INSERT INTO ` + n.Outbox + ` (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now()), COALESCE($9::timestamptz, $8::timestamptz, now()))
ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
		outboxExisting: `SELECT id, payload_hash FROM ` + n.Outbox + ` WHERE idempotency_key = $1`,
		prune: `DELETE FROM ` + n.Inbox + ` WHERE (consumer, event_id) IN (
SELECT consumer, event_id FROM ` + n.Inbox + ` WHERE received_at < $1 AND ($2 = '' OR consumer = $2)
ORDER BY received_at LIMIT $3 FOR UPDATE SKIP LOCKED)`,
	}}, nil
}

// TxFromContext returns the pgx.Tx that the inbox middleware opened for the
// message whose context is ctx, and false outside a handler.
func TxFromContext(ctx context.Context) (pgx.Tx, bool) {
	return middleware.TxFromContext[pgx.Tx](ctx)
}

// BeginInbox implements [stores.Store.BeginInbox] in one round trip: a
// pgx batch of BEGIN, INSERT ... ON CONFLICT DO NOTHING into the inbox, and
// a SELECT of the row's payload hash. The SELECT is a statement of its own,
// so under READ COMMITTED it sees a row a concurrent delivery committed
// while the INSERT waited on it.
func (s *Store) BeginInbox(ctx context.Context, p *stores.BeginInboxParams) (*stores.BeginInboxResult[pgx.Tx], error) {
	var b pgx.Batch
	b.BeginTx(pgx.TxOptions{})
	var inserted int64
	var stored []byte
	b.Queue(s.q.inboxInsert, p.Consumer, p.EventID, p.PayloadHash, nullTime(p.Now)).Exec(func(tag pgconn.CommandTag) error {
		inserted = tag.RowsAffected()
		return nil
	})
	b.Queue(s.q.inboxHash, p.Consumer, p.EventID).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&stored)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	br := s.pool.SendBatch(ctx, &b)
	tx := br.Tx()
	if err := br.Close(); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, interpretError("begin and insert inbox row", err)
	}
	if inserted == 1 {
		return &stores.BeginInboxResult[pgx.Tx]{Tx: tx}, nil
	}
	// A duplicate: the row was committed by an earlier delivery.
	if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil {
		return nil, interpretError("rollback duplicate", err)
	}
	return &stores.BeginInboxResult[pgx.Tx]{
		Duplicate:       true,
		PayloadMismatch: stored != nil && p.PayloadHash != nil && !bytes.Equal(stored, p.PayloadHash),
	}, nil
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
func (s *Store) TransitionIfStateTx(ctx context.Context, tx pgx.Tx, p *stores.TransitionParams) (*stores.TransitionResult, error) {
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
		return &stores.TransitionResult{Outcome: stores.TransitionApplied, Found: true, Previous: stores.AppliedFrom(tp.From)}, nil
	}
	var state string
	err = tx.QueryRow(ctx, current, currentArgs...).Scan(&state)
	found := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, interpretError("read state", err)
	}
	return &stores.TransitionResult{Outcome: stores.OutcomeOf(false, found, state, tp.To), Found: found, Previous: state}, nil
}

// InsertOutboxTx implements [stores.Store.InsertOutboxTx].
func (s *Store) InsertOutboxTx(ctx context.Context, tx pgx.Tx, p *stores.OutboxInsertParams) (*stores.OutboxInsertResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	headers, err := encodeHeaders(p.Headers)
	if err != nil {
		return nil, err
	}
	hash := stores.PayloadHash(p.Payload)
	payload := p.Payload
	if payload == nil {
		payload = []byte{}
	}
	var id int64
	err = tx.QueryRow(ctx, s.q.outboxInsert, p.Kind, p.IdempotencyKey, payload, hash, headers,
		p.Consumer, p.EventID, nullTime(p.Now), nullTime(p.AvailableAt)).Scan(&id)
	if err == nil {
		return &stores.OutboxInsertResult{ID: id}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, interpretError("insert outbox row", err)
	}
	var stored []byte
	if err := tx.QueryRow(ctx, s.q.outboxExisting, p.IdempotencyKey).Scan(&id, &stored); err != nil {
		return nil, interpretError("read outbox row", err)
	}
	if !bytes.Equal(stored, hash) {
		return nil, stores.IdempotencyConflict(p.IdempotencyKey)
	}
	return &stores.OutboxInsertResult{ID: id, Duplicate: true}, nil
}

// ListOutbox implements [stores.OutboxLister.ListOutbox].
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
			&state, &r.Attempts, &r.LastError, &r.CreatedAt, &r.AvailableAt); err != nil {
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

// PruneInbox implements [stores.InboxPruner.PruneInbox]; rows locked by
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

// interpretError is the one place driver errors are translated: errors
// that mean the database is unreachable wrap ackgap.ErrStoreUnavailable.
func interpretError(op string, err error) error {
	if err == nil {
		return nil
	}
	if unavailable(err) {
		return fmt.Errorf("pgxstore: %s: %w: %w", op, ackgap.ErrStoreUnavailable, err)
	}
	return fmt.Errorf("pgxstore: %s: %w", op, err)
}

func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", pgErr.Code == "53300":
			// admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, puddle.ErrClosedPool) || pgconn.SafeToRetry(err)
}
