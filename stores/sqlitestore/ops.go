package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
	"github.com/ackgap/ackgap/stores/internal/sqldb"
)

var _ stores.Operator = (*Store)(nil)

// outboxColumns are the columns scanRow reads, in its order.
const outboxColumns = sqldb.OutboxColumns

// MigrationStatus implements [stores.Operator.MigrationStatus].
func (s *Store) MigrationStatus(ctx context.Context, _ *stores.MigrationStatusParams) (*stores.MigrationStatusResult, error) {
	all, err := sqlbuild.LoadMigrations(migrationFS, "migrations", s.names)
	if err != nil {
		return nil, err
	}
	applied := map[int]time.Time{}
	var exists int
	// s.names.Migration is the quoted name; compare it with each table's
	// name quoted the same way.
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
WHERE type = 'table' AND '"' || replace(name, '"', '""') || '"' = ?1`, s.names.Migration).Scan(&exists); err != nil {
		return nil, interpretError("migration status", err)
	}
	if exists > 0 {
		if applied, err = sqldb.AppliedVersions(ctx, s.db, s.names.Migration); err != nil {
			return nil, interpretError("migration status", err)
		}
	}
	return sqlbuild.MigrationStatus(all, applied), nil
}

// Stats implements [stores.Operator.Stats] with two grouped queries.
func (s *Store) Stats(ctx context.Context, p *stores.StatsParams) (*stores.StatsResult, error) {
	window := p.Window
	if window <= 0 {
		window = stores.StatsWindowDefault
	}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	res := &stores.StatsResult{Window: window, Now: now}
	nowMicros := now.UnixMicro()
	rows, err := s.db.QueryContext(ctx, `SELECT consumer, count(*), min(received_at), max(received_at),
    count(*) FILTER (WHERE received_at > ?1 - ?2 AND received_at <= ?1)
FROM `+s.names.Inbox+` GROUP BY consumer ORDER BY consumer`, nowMicros, window.Microseconds())
	if err != nil {
		return nil, interpretError("stats: inbox", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c stores.InboxConsumerStats
		var oldest, newest int64
		if err := rows.Scan(&c.Consumer, &c.Rows, &oldest, &newest, &c.Recent); err != nil {
			return nil, interpretError("stats: inbox", err)
		}
		c.Oldest, c.Newest = time.UnixMicro(oldest), time.UnixMicro(newest)
		res.Inbox = append(res.Inbox, c)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError("stats: inbox", err)
	}
	// Held and backoff rows are counted in the same scan: pending rows
	// not due at Now, never tried (held) or tried before (backoff).
	orows, err := s.db.QueryContext(ctx, `SELECT kind, state, count(*), min(created_at),
    count(*) FILTER (WHERE state = 'pending' AND attempts = 0 AND available_at > ?1),
    count(*) FILTER (WHERE state = 'pending' AND attempts > 0 AND available_at > ?1),
    min(available_at) FILTER (WHERE state = 'pending' AND attempts = 0 AND available_at > ?1)
FROM `+s.names.Outbox+` GROUP BY kind, state ORDER BY kind, state`, nowMicros)
	if err != nil {
		return nil, interpretError("stats: outbox", err)
	}
	defer orows.Close()
	for orows.Next() {
		var k stores.OutboxKindStats
		var state string
		var oldest int64
		var heldUntil sql.NullInt64
		if err := orows.Scan(&k.Kind, &state, &k.Rows, &oldest, &k.Held, &k.Backoff, &heldUntil); err != nil {
			return nil, interpretError("stats: outbox", err)
		}
		k.State, k.OldestCreatedAt = stores.OutboxState(state), time.UnixMicro(oldest)
		res.Outbox = append(res.Outbox, k)
		res.Held += k.Held
		res.Backoff += k.Backoff
		if heldUntil.Valid && (res.HeldUntil.IsZero() || heldUntil.Int64 < res.HeldUntil.UnixMicro()) {
			res.HeldUntil = time.UnixMicro(heldUntil.Int64)
		}
	}
	if err := orows.Err(); err != nil {
		return nil, interpretError("stats: outbox", err)
	}
	var due sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT min(available_at) FROM `+s.names.Outbox+`
WHERE state IN ('pending', 'claimed') AND available_at <= ?1`, nowMicros).Scan(&due); err != nil {
		return nil, interpretError("stats: outbox due", err)
	}
	if due.Valid {
		res.OldestDueAt = time.UnixMicro(due.Int64)
	}
	return res, nil
}

// LookupEvent implements [stores.Operator.LookupEvent].
func (s *Store) LookupEvent(ctx context.Context, p *stores.LookupEventParams) (*stores.LookupEventResult, error) {
	if p.EventID == "" {
		return nil, errors.New("lookup event: EventID is empty")
	}
	res := &stores.LookupEventResult{}
	rows, err := s.db.QueryContext(ctx, `SELECT consumer, event_id, received_at, payload_hash, COALESCE(trace_parent, '')
FROM `+s.names.Inbox+` WHERE event_id = ?1 AND (?2 = '' OR consumer = ?2) ORDER BY consumer`, p.EventID, p.Consumer)
	if err != nil {
		return nil, interpretError("lookup event: inbox", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r stores.InboxRow
		var at int64
		if err := rows.Scan(&r.Consumer, &r.EventID, &at, &r.PayloadHash, &r.TraceParent); err != nil {
			return nil, interpretError("lookup event: inbox", err)
		}
		r.ReceivedAt = time.UnixMicro(at)
		res.Inbox = append(res.Inbox, r)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError("lookup event: inbox", err)
	}
	res.Outbox, err = s.queryOutbox(ctx, "lookup event: outbox", `SELECT `+outboxColumns+` FROM `+s.names.Outbox+`
WHERE event_id = ?1 AND (?2 = '' OR consumer = ?2) ORDER BY id LIMIT ?3`, p.EventID, p.Consumer, stores.LookupEventLimit)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// FindOutbox implements [stores.Operator.FindOutbox].
func (s *Store) FindOutbox(ctx context.Context, p *stores.FindOutboxParams) (*stores.FindOutboxResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ids, err := jsonArray(p.IDs)
	if err != nil {
		return nil, err
	}
	states, err := jsonArray(stores.StateStrings(p.States))
	if err != nil {
		return nil, err
	}
	var before any
	if !p.CreatedBefore.IsZero() {
		before = p.CreatedBefore.UnixMicro()
	}
	var heldAt any // NULL: no Held filter
	if p.Held {
		now := p.Now
		if now.IsZero() {
			now = time.Now()
		}
		heldAt = now.UnixMicro()
	}
	rows, err := s.queryOutbox(ctx, "find outbox", `SELECT `+outboxColumns+` FROM `+s.names.Outbox+`
WHERE id > ?1 AND (?2 IS NULL OR id IN (SELECT value FROM json_each(?2)))
  AND (?3 IS NULL OR state IN (SELECT value FROM json_each(?3)))
  AND (?4 = '' OR kind = ?4) AND (?5 = '' OR substr(idempotency_key, 1, length(?5)) = ?5)
  AND (?6 IS NULL OR created_at < ?6)
  AND (?8 IS NULL OR (state = 'pending' AND attempts = 0 AND available_at > ?8))
ORDER BY id LIMIT ?7`, p.AfterID, ids, states, p.Kind, p.KeyPrefix, before, p.LimitOrDefault(), heldAt)
	if err != nil {
		return nil, err
	}
	return &stores.FindOutboxResult{Rows: rows}, nil
}

// DeleteOutboxIfState implements [stores.Operator.DeleteOutboxIfState]:
// one DELETE whose WHERE clause holds the state guard, in a write
// transaction of its own.
func (s *Store) DeleteOutboxIfState(ctx context.Context, p *stores.DeleteOutboxParams) (*stores.DeleteOutboxResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ids, err := jsonArray(p.IDs)
	if err != nil {
		return nil, err
	}
	states, err := jsonArray(stores.StateStrings(p.States))
	if err != nil {
		return nil, err
	}
	n, err := s.execWrite(ctx, "delete outbox rows", `DELETE FROM `+s.names.Outbox+`
WHERE id IN (SELECT value FROM json_each(?1)) AND state IN (SELECT value FROM json_each(?2))`, ids, states)
	if err != nil {
		return nil, err
	}
	return &stores.DeleteOutboxResult{Deleted: n}, nil
}

// queryOutbox runs q, which selects outboxColumns, and scans its rows.
func (s *Store) queryOutbox(ctx context.Context, op, q string, args ...any) ([]stores.OutboxRow, error) {
	return sqldb.QueryOutbox(ctx, s.db, interpretError, op, q, args...)
}

// jsonArray returns v as a JSON array for json_each, or nil (SQL NULL: no
// filter) when it is empty.
func jsonArray[T any](v []T) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: json array: %w", err)
	}
	return string(b), nil
}
