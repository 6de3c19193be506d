package pgxstore

import (
	"context"
	"errors"
	"time"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
)

var _ stores.Operator = (*Store)(nil)

// outboxColumns are the columns scanRow reads, in its order.
const outboxColumns = `id, kind, idempotency_key, payload, headers, consumer, event_id, state,
attempts, last_error, created_at, available_at`

// MigrationStatus implements [stores.Operator.MigrationStatus].
func (s *Store) MigrationStatus(ctx context.Context, _ *stores.MigrationStatusParams) (*stores.MigrationStatusResult, error) {
	all, err := sqlbuild.LoadMigrations(migrationFS, "migrations", s.names)
	if err != nil {
		return nil, err
	}
	applied := map[int]time.Time{}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.names.Migration).Scan(&exists); err != nil {
		return nil, interpretError("migration status", err)
	}
	if exists {
		rows, err := s.pool.Query(ctx, `SELECT version, applied_at FROM `+s.names.Migration)
		if err != nil {
			return nil, interpretError("migration status", err)
		}
		for rows.Next() {
			var v int
			var at time.Time
			if err := rows.Scan(&v, &at); err != nil {
				rows.Close()
				return nil, interpretError("migration status", err)
			}
			applied[v] = at
		}
		if err := rows.Err(); err != nil {
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
	res := &stores.StatsResult{Window: window}
	if err := s.pool.QueryRow(ctx, `SELECT `+nowSQL, nullTime(p.Now)).Scan(&res.Now); err != nil {
		return nil, interpretError("stats", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT consumer, count(*), min(received_at), max(received_at),
    count(*) FILTER (WHERE received_at > $1::timestamptz - $2::bigint * interval '1 microsecond' AND received_at <= $1)
FROM `+s.names.Inbox+` GROUP BY consumer ORDER BY consumer`, res.Now, window.Microseconds())
	if err != nil {
		return nil, interpretError("stats: inbox", err)
	}
	for rows.Next() {
		var c stores.InboxConsumerStats
		if err := rows.Scan(&c.Consumer, &c.Rows, &c.Oldest, &c.Newest, &c.Recent); err != nil {
			rows.Close()
			return nil, interpretError("stats: inbox", err)
		}
		res.Inbox = append(res.Inbox, c)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError("stats: inbox", err)
	}
	// Held and backoff rows are counted in the same scan: pending rows
	// not due at Now, never tried (held) or tried before (backoff).
	rows, err = s.pool.Query(ctx, `SELECT kind, state, count(*), min(created_at),
    count(*) FILTER (WHERE state = 'pending' AND attempts = 0 AND available_at > $1),
    count(*) FILTER (WHERE state = 'pending' AND attempts > 0 AND available_at > $1),
    min(available_at) FILTER (WHERE state = 'pending' AND attempts = 0 AND available_at > $1)
FROM `+s.names.Outbox+` GROUP BY kind, state ORDER BY kind, state`, res.Now)
	if err != nil {
		return nil, interpretError("stats: outbox", err)
	}
	for rows.Next() {
		var k stores.OutboxKindStats
		var state string
		var heldUntil *time.Time
		if err := rows.Scan(&k.Kind, &state, &k.Rows, &k.OldestCreatedAt, &k.Held, &k.Backoff, &heldUntil); err != nil {
			rows.Close()
			return nil, interpretError("stats: outbox", err)
		}
		k.State = stores.OutboxState(state)
		res.Outbox = append(res.Outbox, k)
		res.Held += k.Held
		res.Backoff += k.Backoff
		if heldUntil != nil && (res.HeldUntil.IsZero() || heldUntil.Before(res.HeldUntil)) {
			res.HeldUntil = *heldUntil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError("stats: outbox", err)
	}
	var due *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT min(available_at) FROM `+s.names.Outbox+`
WHERE state IN ('pending', 'claimed') AND available_at <= $1`, res.Now).Scan(&due); err != nil {
		return nil, interpretError("stats: outbox due", err)
	}
	if due != nil {
		res.OldestDueAt = *due
	}
	return res, nil
}

// LookupEvent implements [stores.Operator.LookupEvent].
func (s *Store) LookupEvent(ctx context.Context, p *stores.LookupEventParams) (*stores.LookupEventResult, error) {
	if p.EventID == "" {
		return nil, errors.New("lookup event: EventID is empty")
	}
	res := &stores.LookupEventResult{}
	rows, err := s.pool.Query(ctx, `SELECT consumer, event_id, received_at, payload_hash, COALESCE(trace_parent, '')
FROM `+s.names.Inbox+` WHERE event_id = $1 AND ($2 = '' OR consumer = $2) ORDER BY consumer`, p.EventID, p.Consumer)
	if err != nil {
		return nil, interpretError("lookup event: inbox", err)
	}
	for rows.Next() {
		var r stores.InboxRow
		if err := rows.Scan(&r.Consumer, &r.EventID, &r.ReceivedAt, &r.PayloadHash, &r.TraceParent); err != nil {
			rows.Close()
			return nil, interpretError("lookup event: inbox", err)
		}
		res.Inbox = append(res.Inbox, r)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError("lookup event: inbox", err)
	}
	out, err := s.queryOutbox(ctx, "lookup event: outbox", `SELECT `+outboxColumns+` FROM `+s.names.Outbox+`
WHERE event_id = $1 AND ($2 = '' OR consumer = $2) ORDER BY id LIMIT $3`, p.EventID, p.Consumer, stores.LookupEventLimit)
	if err != nil {
		return nil, err
	}
	res.Outbox = out
	return res, nil
}

// FindOutbox implements [stores.Operator.FindOutbox].
func (s *Store) FindOutbox(ctx context.Context, p *stores.FindOutboxParams) (*stores.FindOutboxResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var ids []int64
	if len(p.IDs) > 0 {
		ids = p.IDs
	}
	var states []string
	if len(p.States) > 0 {
		states = stores.StateStrings(p.States)
	}
	rows, err := s.queryOutbox(ctx, "find outbox", `SELECT `+outboxColumns+` FROM `+s.names.Outbox+`
WHERE id > $1 AND ($2::bigint[] IS NULL OR id = ANY($2::bigint[])) AND ($3::text[] IS NULL OR state = ANY($3::text[]))
  AND ($4 = '' OR kind = $4) AND ($5 = '' OR starts_with(idempotency_key, $5))
  AND ($6::timestamptz IS NULL OR created_at < $6)
  AND (NOT $8 OR (state = 'pending' AND attempts = 0 AND available_at > COALESCE($9::timestamptz, now())))
ORDER BY id LIMIT $7`, p.AfterID, ids, states, p.Kind, p.KeyPrefix, nullTime(p.CreatedBefore), p.LimitOrDefault(),
		p.Held, nullTime(p.Now))
	if err != nil {
		return nil, err
	}
	return &stores.FindOutboxResult{Rows: rows}, nil
}

// DeleteOutboxIfState implements [stores.Operator.DeleteOutboxIfState]:
// one DELETE whose WHERE clause holds the state guard.
func (s *Store) DeleteOutboxIfState(ctx context.Context, p *stores.DeleteOutboxParams) (*stores.DeleteOutboxResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.names.Outbox+` WHERE id = ANY($1::bigint[]) AND state = ANY($2::text[])`,
		p.IDs, stores.StateStrings(p.States))
	if err != nil {
		return nil, interpretError("delete outbox rows", err)
	}
	return &stores.DeleteOutboxResult{Deleted: tag.RowsAffected()}, nil
}

// queryOutbox runs q, which selects outboxColumns, and scans its rows.
func (s *Store) queryOutbox(ctx context.Context, op, q string, args ...any) ([]stores.OutboxRow, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, interpretError(op, err)
	}
	defer rows.Close()
	var out []stores.OutboxRow
	for rows.Next() {
		var r stores.OutboxRow
		if err := scanRow(rows, &r); err != nil {
			return nil, interpretError(op, err)
		}
		out = append(out, r)
	}
	return out, interpretError(op, rows.Err())
}
