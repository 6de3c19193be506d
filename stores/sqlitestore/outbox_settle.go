package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

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
// [Store.SettleOutboxIfClaimedOrHeld] in one write
// transaction (one commit, one WAL sync for every row of p): a prepared
// guarded UPDATE per row, whose WHERE clause holds the row's guard (state
// claimed, the row's claim token). SQLite runs them in process, so the
// cost is the commit, not the statements.
func (s *Store) settleClaimed(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	now := micros(p.Now)
	return s.settleRows(ctx, "settle outbox rows", `UPDATE `+s.names.Outbox+`
SET state = ?3,
    done_at = CASE WHEN ?3 = 'done' THEN ?4 ELSE done_at END,
    available_at = CASE WHEN ?3 = 'pending' THEN ?4 + ?5 ELSE available_at END,
    last_error = CASE WHEN ?3 = 'done' THEN last_error ELSE ?6 END,
    claimed_until = NULL, claim_token = NULL
WHERE id = ?1 AND state = 'claimed' AND claim_token = ?2`, len(p.Rows), func(i int) []any {
		r := &p.Rows[i]
		return []any{r.ID, r.ClaimToken, string(r.State), now, r.Delay.Microseconds(), r.LastError}
	})
}

// settleHeld records the outcomes of held rows for
// [Store.SettleOutboxIfClaimedOrHeld] in one write transaction: a
// prepared guarded UPDATE per row, found by its idempotency key.
func (s *Store) settleHeld(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	now := micros(p.Now)
	n := len(p.Rows)
	res := &stores.OutboxSettleResult{Changed: make([]bool, n), IDs: make([]int64, n)}
	if n == 0 {
		return res, nil
	}
	err := s.writeTx(ctx, "settle held outbox rows", func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `UPDATE `+s.names.Outbox+`
SET state = ?3, attempts = 1,
    done_at = CASE WHEN ?3 = 'done' THEN ?4 ELSE done_at END,
    available_at = CASE WHEN ?3 = 'pending' THEN ?4 + ?5 ELSE available_at END,
    last_error = CASE WHEN ?3 = 'done' THEN last_error ELSE ?6 END
WHERE idempotency_key = ?1 AND state = 'pending' AND attempts = 0 AND available_at = ?2
RETURNING id`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := range p.Rows {
			r := &p.Rows[i]
			err := stmt.QueryRowContext(ctx, r.IdempotencyKey, r.HeldUntil.UnixMicro(), string(r.State), now, r.Delay.Microseconds(), r.LastError).Scan(&res.IDs[i])
			switch {
			case errors.Is(err, sql.ErrNoRows): // the guard failed: left alone
			case err != nil:
				return err
			default:
				res.Changed[i] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// settleRows runs query, prepared once, for each of n rows with the
// arguments args(i), in one write transaction (one commit, one WAL sync),
// and reports per row whether it changed one.
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
