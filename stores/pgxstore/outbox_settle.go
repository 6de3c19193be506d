package pgxstore

import (
	"context"

	"github.com/ackgap/ackgap/stores"
)

// SettleOutboxManyIfClaimed implements
// [stores.OutboxStore.SettleOutboxManyIfClaimed] in one UPDATE ...
// FROM unnest(...) in its own short transaction: one commit (and one WAL
// flush) for every row of p, whose WHERE clause holds each row's guard
// (state claimed, the row's claim token). Its RETURNING lists the rows it
// changed.
func (s *Store) SettleOutboxManyIfClaimed(ctx context.Context, p *stores.OutboxSettleManyParams) (*stores.OutboxSettleManyResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	res := &stores.OutboxSettleManyResult{Changed: make([]bool, len(p.Rows))}
	if len(p.Rows) == 0 {
		return res, nil
	}
	n := len(p.Rows)
	ids, tokens, states, delays, errs := make([]int64, n), make([]string, n), make([]string, n), make([]int64, n), make([]string, n)
	at := make(map[int64]int, n)
	for i, r := range p.Rows {
		ids[i], tokens[i], states[i], delays[i], errs[i] = r.ID, r.ClaimToken, string(r.State), r.Delay.Microseconds(), r.LastError
		at[r.ID] = i
	}
	rows, err := s.pool.Query(ctx, `UPDATE `+s.names.Outbox+` AS o
SET state = s.state,
    done_at = CASE WHEN s.state = 'done' THEN `+nowSQL+` ELSE o.done_at END,
    available_at = CASE WHEN s.state = 'pending' THEN `+nowSQL+` + s.delay_us * interval '1 microsecond' ELSE o.available_at END,
    last_error = CASE WHEN s.state = 'done' THEN o.last_error ELSE s.last_error END,
    claimed_until = NULL, claim_token = NULL
FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[]) AS s(id, token, state, delay_us, last_error)
WHERE o.id = s.id AND o.state = 'claimed' AND o.claim_token = s.token
RETURNING o.id`, nullTime(p.Now), ids, tokens, states, delays, errs)
	if err != nil {
		return nil, interpretError("settle outbox rows", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, interpretError("settle outbox rows", err)
		}
		res.Changed[at[id]] = true
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError("settle outbox rows", err)
	}
	return res, nil
}
