package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
	"github.com/ackgap/ackgap/stores/internal/sqldb"
)

var _ stores.Operator = (*Store)(nil)

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
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables
WHERE table_schema = DATABASE() AND CONCAT('"', REPLACE(table_name, '"', '""'), '"') = ?`, s.names.Migration).Scan(&exists); err != nil {
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
	rows, err := s.db.QueryContext(ctx, `SELECT consumer, count(*), MIN(received_at), MAX(received_at),
    `+count(`received_at > ? AND received_at <= ?`)+`
FROM `+s.names.Inbox+` GROUP BY consumer ORDER BY consumer`, nowMicros-window.Microseconds(), nowMicros)
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
	held := `state = 'pending' AND attempts = 0 AND available_at > ?`
	orows, err := s.db.QueryContext(ctx, `SELECT kind, state, count(*), MIN(created_at),
    `+count(held)+`,
    `+count(`state = 'pending' AND attempts > 0 AND available_at > ?`)+`,
    MIN(CASE WHEN `+held+` THEN available_at END)
FROM `+s.names.Outbox+` GROUP BY kind, state ORDER BY kind, state`, nowMicros, nowMicros, nowMicros)
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
	if err := s.db.QueryRowContext(ctx, `SELECT MIN(available_at) FROM `+s.names.Outbox+`
WHERE state IN ('pending', 'claimed') AND available_at <= ?`, nowMicros).Scan(&due); err != nil {
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
FROM `+s.names.Inbox+` WHERE event_id = ? AND (? = '' OR consumer = ?) ORDER BY consumer`, p.EventID, p.Consumer, p.Consumer)
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
WHERE event_id = ? AND (? = '' OR consumer = ?) ORDER BY id LIMIT ?`, p.EventID, p.Consumer, p.Consumer, stores.LookupEventLimit)
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
	q := `SELECT ` + outboxColumns + ` FROM ` + s.names.Outbox + `
WHERE id > ? AND (? = '' OR kind = ?) AND (? = '' OR LEFT(idempotency_key, CHAR_LENGTH(?)) = ?)`
	args := []any{p.AfterID, p.Kind, p.Kind, p.KeyPrefix, p.KeyPrefix, p.KeyPrefix}
	if len(p.IDs) > 0 {
		q += ` AND id IN (` + placeholders(len(p.IDs)) + `)`
		args = append(args, anys(p.IDs)...)
	}
	if states := stores.StateStrings(p.States); len(states) > 0 {
		q += ` AND state IN (` + placeholders(len(states)) + `)`
		args = append(args, anys(states)...)
	}
	if !p.CreatedBefore.IsZero() {
		q += ` AND created_at < ?`
		args = append(args, p.CreatedBefore.UnixMicro())
	}
	if p.Held {
		q += ` AND state = 'pending' AND attempts = 0 AND available_at > ?`
		args = append(args, micros(p.Now))
	}
	rows, err := s.queryOutbox(ctx, "find outbox", q+` ORDER BY id LIMIT ?`, append(args, p.LimitOrDefault())...)
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
	states := stores.StateStrings(p.States)
	n, err := s.execWrite(ctx, "delete outbox rows", `DELETE FROM `+s.names.Outbox+`
WHERE id IN (`+placeholders(len(p.IDs))+`) AND state IN (`+placeholders(len(states))+`)`, append(anys(p.IDs), anys(states)...)...)
	if err != nil {
		return nil, err
	}
	return &stores.DeleteOutboxResult{Deleted: n}, nil
}
