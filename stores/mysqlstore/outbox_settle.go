package mysqlstore

import (
	"context"
	"database/sql"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqldb"
	"github.com/ackgap/ackgap/stores/storekit"
)

// SettleOutboxIfClaimedOrHeld implements
// [stores.OutboxStore.SettleOutboxIfClaimedOrHeld]: the claimed rows with
// one statement (settleClaimed), the held rows with another (settleHeld),
// each in its own short transaction (storekit.SettleByGuard).
func (s *Store) SettleOutboxIfClaimedOrHeld(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	return storekit.SettleByGuard(ctx, p, s.settleClaimed, s.settleHeld)
}

// settleClaimed records the outcomes of claimed rows for
// [Store.SettleOutboxIfClaimedOrHeld] in one READ COMMITTED
// transaction (one commit for every row of p): a prepared guarded UPDATE
// per row, whose WHERE clause holds the row's guard (state claimed, the
// row's claim token). Each UPDATE moves the state, so its affected rows
// (changed rows, clientFoundRows off) say whether the guard held.
func (s *Store) settleClaimed(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	now := micros(p.Now)
	return s.settleRows(ctx, "settle outbox rows", `UPDATE `+s.names.Outbox+`
SET done_at = CASE WHEN ? = 'done' THEN ? ELSE done_at END,
    available_at = CASE WHEN ? = 'pending' THEN ? ELSE available_at END,
    last_error = CASE WHEN ? = 'done' THEN last_error ELSE ? END,
    state = ?, claimed_until = NULL, claim_token = NULL
WHERE id = ? AND state = 'claimed' AND claim_token = ?`, len(p.Rows), func(i int) []any {
		r := &p.Rows[i]
		st := string(r.State)
		return []any{st, now, st, now + r.Delay.Microseconds(), st, r.LastError, st, r.ID, r.ClaimToken}
	})
}

// settleHeld records the outcomes of held rows for
// [Store.SettleOutboxIfClaimedOrHeld] in one transaction: a
// prepared guarded UPDATE per row, found by its idempotency key. Each
// UPDATE sets attempts from 0 to 1, so a matched row is a changed row.
func (s *Store) settleHeld(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	now := micros(p.Now)
	n := len(p.Rows)
	res := &stores.OutboxSettleResult{Changed: make([]bool, n), IDs: make([]int64, n)}
	if n == 0 {
		return res, nil
	}
	err := s.writeTx(ctx, "settle held outbox rows", func(tx *sql.Tx) error {
		changed, err := sqldb.SettleRows(ctx, tx, s.settleHeldSQL(), n, func(i int) []any {
			r := &p.Rows[i]
			st := string(r.State)
			return []any{st, now, st, now + r.Delay.Microseconds(), st, r.LastError, st, r.IdempotencyKey, r.HeldUntil.UnixMicro()}
		})
		if err != nil {
			return err
		}
		res.Changed = changed
		// No UPDATE ... RETURNING on MariaDB 10.11 or MySQL 8: the ids of
		// the rows settled are read by their unique keys in the same
		// transaction, for the relay's logs.
		var keys []any
		at := map[string]int{}
		for i, c := range changed {
			if c {
				keys = append(keys, p.Rows[i].IdempotencyKey)
				at[p.Rows[i].IdempotencyKey] = i
			}
		}
		if len(keys) == 0 {
			return nil
		}
		rows, err := tx.QueryContext(ctx, `SELECT idempotency_key, id FROM `+s.names.Outbox+` WHERE idempotency_key IN (`+placeholders(len(keys))+`)`, keys...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var key string
			var id int64
			if err := rows.Scan(&key, &id); err != nil {
				return err
			}
			res.IDs[at[key]] = id
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// settleHeldSQL is the guarded UPDATE of one held row, found by its
// idempotency key. It sets attempts from 0 to 1, so a matched row is a
// changed row.
func (s *Store) settleHeldSQL() string {
	return `UPDATE ` + s.names.Outbox + `
SET done_at = CASE WHEN ? = 'done' THEN ? ELSE done_at END,
    available_at = CASE WHEN ? = 'pending' THEN ? ELSE available_at END,
    last_error = CASE WHEN ? = 'done' THEN last_error ELSE ? END,
    state = ?, attempts = 1
WHERE idempotency_key = ? AND state = 'pending' AND attempts = 0 AND available_at = ?`
}

// settleRows runs query, prepared once, for each of n rows with the
// arguments args(i), in one transaction, and reports per row whether it
// changed one.
func (s *Store) settleRows(ctx context.Context, op, query string, n int, args func(i int) []any) (*stores.OutboxSettleResult, error) {
	res := &stores.OutboxSettleResult{Changed: make([]bool, n)}
	if n == 0 {
		return res, nil
	}
	err := s.writeTx(ctx, op, func(tx *sql.Tx) error {
		changed, err := sqldb.SettleRows(ctx, tx, query, n, args)
		res.Changed = changed
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
