package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqldb"
)

var _ stores.OutboxStore = (*Store)(nil)

// ListenOutbox implements [stores.OutboxStore.ListenOutbox]: SQLite has no
// notifications across connections or processes, so it returns an error
// wrapping errors.ErrUnsupported at once, and relays poll.
func (s *Store) ListenOutbox(context.Context, *stores.OutboxListenParams) error {
	return fmt.Errorf("sqlitestore: listen outbox: SQLite has no notifications: %w", errors.ErrUnsupported)
}

// ClaimOutbox implements [stores.OutboxStore.ClaimOutbox]: one UPDATE ...
// WHERE id IN (the due rows, oldest due first) RETURNING, in a
// transaction begun with BEGIN IMMEDIATE (the DSN's _txlock=immediate),
// which takes SQLite's single write lock up front: claimers take turns,
// and the second sees the first one's claims.
func (s *Store) ClaimOutbox(ctx context.Context, p *stores.OutboxClaimParams) (*stores.OutboxClaimResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	token, err := sqldb.NewClaimToken()
	if err != nil {
		return nil, err
	}
	var kinds any // NULL: every kind
	if len(p.Kinds) > 0 {
		b, err := json.Marshal(p.Kinds)
		if err != nil {
			return nil, fmt.Errorf("claim outbox: kinds: %w", err)
		}
		kinds = string(b)
	}
	o := s.names.Outbox
	res := &stores.OutboxClaimResult{}
	asked := time.Now()
	err = s.writeTx(ctx, "claim outbox", func(tx *sql.Tx) error {
		// The lease starts when the write lock is held, not when it was
		// asked for: a wait for the lock (up to the busy timeout) would
		// otherwise eat into the lease.
		now := micros(time.Time{}) // zero Now: the clock, read under the lock
		if !p.Now.IsZero() {
			now = micros(p.Now.Add(time.Since(asked)))
		}
		until := now + p.Lease.Microseconds()
		rows, err := tx.QueryContext(ctx, `UPDATE `+o+`
SET state = 'claimed', attempts = attempts + 1, claim_token = ?4, claimed_until = ?5, available_at = ?5
WHERE id IN (
    SELECT id FROM `+o+`
    WHERE state IN ('pending', 'claimed') AND available_at <= ?1
      AND (?2 IS NULL OR kind IN (SELECT value FROM json_each(?2)))
    ORDER BY available_at, id
    LIMIT ?3)
RETURNING id, kind, idempotency_key, payload, headers, consumer, event_id, state, attempts, last_error,
    created_at, available_at, claimed_until`, now, kinds, p.LimitOrDefault(), token, until)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c stores.OutboxRow
			var claimedUntil int64
			if err := sqldb.ScanRow(rows, &c, &claimedUntil); err != nil {
				return err
			}
			c.Claim = stores.OutboxClaim{ID: c.ID, Token: token, Until: time.UnixMicro(claimedUntil)}
			res.Rows = append(res.Rows, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(res.Rows, func(a, b stores.OutboxRow) int { return cmp.Compare(a.ID, b.ID) })
	return res, nil
}

// execWrite runs one writing statement in its own write transaction
// (writeTx) and returns the rows it affected.
func (s *Store) execWrite(ctx context.Context, op, q string, args ...any) (int64, error) {
	var n int64
	err := s.writeTx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// RedriveOutboxIfDead implements [stores.OutboxStore.RedriveOutboxIfDead].
func (s *Store) RedriveOutboxIfDead(ctx context.Context, p *stores.OutboxRedriveParams) (*stores.OutboxRedriveResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = stores.OutboxRedriveLimitDefault
	}
	var ids any // NULL: every dead row
	if len(p.IDs) > 0 {
		b, err := json.Marshal(p.IDs)
		if err != nil {
			return nil, fmt.Errorf("redrive outbox: ids: %w", err)
		}
		ids = string(b)
	}
	o := s.names.Outbox
	n, err := s.execWrite(ctx, "redrive outbox", `UPDATE `+o+`
SET state = 'pending', attempts = 0, available_at = ?1, claimed_until = NULL, claim_token = NULL
WHERE state = 'dead' AND id IN (
    SELECT id FROM `+o+` WHERE state = 'dead' AND (?2 IS NULL OR id IN (SELECT value FROM json_each(?2)))
      AND (?3 = '' OR kind = ?3)
    ORDER BY id LIMIT ?4)`, micros(p.Now), ids, p.Kind, limit)
	if err != nil {
		return nil, err
	}
	return &stores.OutboxRedriveResult{Redriven: n}, nil
}

// PruneOutboxIfDone implements [stores.OutboxStore.PruneOutboxIfDone].
// SQLite runs one writer at a time, so concurrent pruners take turns.
func (s *Store) PruneOutboxIfDone(ctx context.Context, p *stores.OutboxPruneParams) (*stores.OutboxPruneResult, error) {
	if p.Before.IsZero() {
		return nil, errors.New("prune outbox: Before is zero")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = stores.OutboxPruneLimitDefault
	}
	o := s.names.Outbox
	n, err := s.execWrite(ctx, "prune outbox", `DELETE FROM `+o+` WHERE state = 'done' AND id IN (
    SELECT id FROM `+o+` WHERE state = 'done' AND done_at < ?1 ORDER BY done_at LIMIT ?2)`, p.Before.UnixMicro(), limit)
	if err != nil {
		return nil, err
	}
	return &stores.OutboxPruneResult{Deleted: n}, nil
}

// OutboxStats implements [stores.OutboxStore.OutboxStats] with one query
// that reads only pending, claimed and dead rows, found through their
// partial indexes.
func (s *Store) OutboxStats(ctx context.Context, p *stores.OutboxStatsParams) (*stores.OutboxStatsResult, error) {
	o := s.names.Outbox
	var oldest sql.NullInt64
	res := &stores.OutboxStatsResult{}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	err := s.db.QueryRowContext(ctx, `SELECT
    count(*) FILTER (WHERE state = 'pending'),
    count(*) FILTER (WHERE state = 'claimed'),
    min(created_at),
    (SELECT count(*) FROM `+o+` WHERE state = 'dead' AND (?1 = '' OR kind = ?1)),
    count(*) FILTER (WHERE state = 'pending' AND attempts = 0 AND available_at > ?2),
    count(*) FILTER (WHERE state = 'pending' AND attempts > 0 AND available_at > ?2)
FROM `+o+` WHERE state IN ('pending', 'claimed') AND (?1 = '' OR kind = ?1)`, p.Kind, now.UnixMicro()).
		Scan(&res.Pending, &res.Claimed, &oldest, &res.Dead, &res.Held, &res.Backoff)
	if err != nil {
		return nil, interpretError("outbox stats", err)
	}
	if oldest.Valid {
		res.OldestPendingCreatedAt = time.UnixMicro(oldest.Int64)
	}
	return res, nil
}

// writeTurns holds, per *sql.DB that the outbox methods write through, a
// one-slot semaphore. It is never pruned: one small entry per database
// ever used.
var writeTurns sync.Map // *sql.DB -> chan struct{}

// writeTx runs fn in a write transaction (BEGIN IMMEDIATE with the DSN's
// _txlock=immediate, so the write lock is taken, or waited for up to the
// busy timeout, before the first statement) and commits it.
//
// The outbox writes of one process to one database first take turns on a
// semaphore (waiting at most until ctx ends): SQLite's busy handler does not queue waiters but sleeps and
// retries (1 ms, 2 ms, 5 ms, ... up to 100 ms per sleep), so a dozen relay
// workers fighting for the write lock starve one another, and a write can
// miss the busy timeout. Writers in other processes, and inbox
// transactions, still meet at SQLite's lock.
func (s *Store) writeTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	turn, _ := writeTurns.LoadOrStore(s.db, make(chan struct{}, 1))
	select {
	case turn.(chan struct{}) <- struct{}{}:
	case <-ctx.Done():
		return interpretError(op, ctx.Err())
	}
	defer func() { <-turn.(chan struct{}) }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return interpretError(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return interpretError(op, err)
	}
	return interpretError(op, tx.Commit())
}
