package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqldb"
)

var _ stores.OutboxStore = (*Store)(nil)

// timeNow is time.Now, for the version table's applied_at.
var timeNow = time.Now

// ListenOutbox implements [stores.OutboxStore.ListenOutbox]: MariaDB and
// MySQL have no notifications, so it returns an error wrapping
// errors.ErrUnsupported at once, and relays are woken by direct dispatch
// in process and otherwise poll (outbox Config.PollInterval).
func (s *Store) ListenOutbox(context.Context, *stores.OutboxListenParams) error {
	return fmt.Errorf("mysqlstore: listen outbox: the server has no notifications: %w", errors.ErrUnsupported)
}

// outboxColumns are the columns scanRow reads, in its order.
const outboxColumns = sqldb.OutboxColumns

// ClaimOutbox implements [stores.OutboxStore.ClaimOutbox] in one READ
// COMMITTED transaction: SELECT id ... ORDER BY available_at, id LIMIT n
// FOR UPDATE SKIP LOCKED (concurrent claimers pass over each other's rows
// instead of queueing), one UPDATE of those ids, and a SELECT of them
// (MariaDB 10.11 has no UPDATE ... RETURNING, MySQL 8 no RETURNING).
func (s *Store) ClaimOutbox(ctx context.Context, p *stores.OutboxClaimParams) (*stores.OutboxClaimResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	token, err := sqldb.NewClaimToken()
	if err != nil {
		return nil, err
	}
	now := micros(p.Now)
	until := now + p.Lease.Microseconds()
	o := s.names.Outbox
	res := &stores.OutboxClaimResult{}
	err = s.writeTx(ctx, "claim outbox", func(tx *sql.Tx) error {
		q := `SELECT id FROM ` + o + ` WHERE state IN ('pending', 'claimed') AND available_at <= ?`
		args := []any{now}
		if len(p.Kinds) > 0 {
			q += ` AND kind IN (` + placeholders(len(p.Kinds)) + `)`
			args = append(args, anys(p.Kinds)...)
		}
		q += ` ORDER BY available_at, id LIMIT ? FOR UPDATE SKIP LOCKED`
		args = append(args, p.LimitOrDefault())
		ids, err := queryInts(ctx, tx, q, args...)
		if err != nil || len(ids) == 0 {
			return err
		}
		in := placeholders(len(ids))
		if _, err := tx.ExecContext(ctx, `UPDATE `+o+`
SET state = 'claimed', attempts = attempts + 1, claim_token = ?, claimed_until = ?, available_at = ?
WHERE id IN (`+in+`)`, append([]any{token, until, until}, anys(ids)...)...); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+outboxColumns+`, claimed_until FROM `+o+` WHERE id IN (`+in+`) ORDER BY id`, anys(ids)...)
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
	return res, nil
}

// queryInts runs q and returns its one BIGINT column.
func queryInts(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// execWrite runs one writing statement (autocommit) and returns the rows
// it changed.
func (s *Store) execWrite(ctx context.Context, op, q string, args ...any) (int64, error) {
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, interpretError(op, err)
	}
	n, err := res.RowsAffected()
	return n, interpretError(op, err)
}

// RedriveOutboxIfDead implements [stores.OutboxStore.RedriveOutboxIfDead]:
// one UPDATE ... WHERE state = 'dead' ... ORDER BY id LIMIT n.
func (s *Store) RedriveOutboxIfDead(ctx context.Context, p *stores.OutboxRedriveParams) (*stores.OutboxRedriveResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = stores.OutboxRedriveLimitDefault
	}
	q := `UPDATE ` + s.names.Outbox + `
SET state = 'pending', attempts = 0, available_at = ?, claimed_until = NULL, claim_token = NULL
WHERE state = 'dead' AND (? = '' OR kind = ?)`
	args := []any{micros(p.Now), p.Kind, p.Kind}
	if len(p.IDs) > 0 {
		q += ` AND id IN (` + placeholders(len(p.IDs)) + `)`
		args = append(args, anys(p.IDs)...)
	}
	n, err := s.execWrite(ctx, "redrive outbox", q+` ORDER BY id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	return &stores.OutboxRedriveResult{Redriven: n}, nil
}

// PruneOutboxIfDone implements [stores.OutboxStore.PruneOutboxIfDone]: one
// DELETE ... ORDER BY done_at LIMIT n.
func (s *Store) PruneOutboxIfDone(ctx context.Context, p *stores.OutboxPruneParams) (*stores.OutboxPruneResult, error) {
	if p.Before.IsZero() {
		return nil, errors.New("prune outbox: Before is zero")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = stores.OutboxPruneLimitDefault
	}
	n, err := s.execWrite(ctx, "prune outbox", `DELETE FROM `+s.names.Outbox+` WHERE state = 'done' AND done_at < ?
ORDER BY done_at LIMIT ?`, p.Before.UnixMicro(), limit)
	if err != nil {
		return nil, err
	}
	return &stores.OutboxPruneResult{Deleted: n}, nil
}

// count is a portable count(*) FILTER (WHERE cond).
func count(cond string) string { return `COALESCE(SUM(CASE WHEN ` + cond + ` THEN 1 ELSE 0 END), 0)` }

// OutboxStats implements [stores.OutboxStore.OutboxStats] with one query
// over pending, claimed and dead rows.
func (s *Store) OutboxStats(ctx context.Context, p *stores.OutboxStatsParams) (*stores.OutboxStatsResult, error) {
	o := s.names.Outbox
	var oldest sql.NullInt64
	res := &stores.OutboxStatsResult{}
	now := micros(p.Now)
	err := s.db.QueryRowContext(ctx, `SELECT
    `+count(`state = 'pending'`)+`,
    `+count(`state = 'claimed'`)+`,
    MIN(CASE WHEN state IN ('pending', 'claimed') THEN created_at END),
    `+count(`state = 'dead'`)+`,
    `+count(`state = 'pending' AND attempts = 0 AND available_at > ?`)+`,
    `+count(`state = 'pending' AND attempts > 0 AND available_at > ?`)+`
FROM `+o+` WHERE state IN ('pending', 'claimed', 'dead') AND (? = '' OR kind = ?)`, now, now, p.Kind, p.Kind).
		Scan(&res.Pending, &res.Claimed, &oldest, &res.Dead, &res.Held, &res.Backoff)
	if err != nil {
		return nil, interpretError("outbox stats", err)
	}
	if oldest.Valid {
		res.OldestPendingCreatedAt = time.UnixMicro(oldest.Int64)
	}
	return res, nil
}

// writeTx runs fn in a READ COMMITTED transaction and commits it.
func (s *Store) writeTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, s.txOpts)
	if err != nil {
		return interpretError(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return interpretError(op, err)
	}
	return interpretError(op, tx.Commit())
}

// queryOutbox runs q, which selects outboxColumns, and scans its rows.
func (s *Store) queryOutbox(ctx context.Context, op, q string, args ...any) ([]stores.OutboxRow, error) {
	return sqldb.QueryOutbox(ctx, s.db, interpretError, op, q, args...)
}
