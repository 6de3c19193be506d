package pgxstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ackgap/ackgap/stores"
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
// [Store.SettleOutboxIfClaimedOrHeld] in one UPDATE in its own
// short transaction: one commit (and one WAL flush) for every row of p,
// whose WHERE clause holds each row's guard (state claimed, the row's
// claim token). Its RETURNING lists the rows it changed.
//
// The UPDATE finds the rows by primary key (id = ANY($2)) and takes each
// row's values from the arrays at the row's position (settlePos), with no
// join: joined to unnest(...), the generic plan PostgreSQL settled on read
// the whole due index (every pending and claimed row) and hashed it on
// every settle, a cost that grows with the backlog (relay PostgreSQL CPU
// per event in the Kafka modes benchmark: 129 µs before, 97 after).
func (s *Store) settleClaimed(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	res := &stores.OutboxSettleResult{Changed: make([]bool, len(p.Rows))}
	if len(p.Rows) == 0 {
		return res, nil
	}
	n := len(p.Rows)
	at := make(map[int64]int, n)
	order := make([]int, n) // indexes of p.Rows by id: settlePos needs the ids sorted
	for i, r := range p.Rows {
		at[r.ID], order[i] = i, i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(p.Rows[a].ID, p.Rows[b].ID) })
	ids, tokens, states, delays, errs := make([]int64, n), make([]string, n), make([]string, n), make([]int64, n), make([]string, n)
	for k, i := range order {
		r := &p.Rows[i]
		ids[k], tokens[k], states[k], delays[k], errs[k] = r.ID, r.ClaimToken, string(r.State), r.Delay.Microseconds(), r.LastError
	}
	rows, err := s.pool.Query(ctx, `UPDATE `+s.names.Outbox+` AS o
SET state = ($4::text[])[`+settlePos+`],
    done_at = CASE WHEN ($4::text[])[`+settlePos+`] = 'done' THEN `+nowSQL+` ELSE o.done_at END,
    available_at = CASE WHEN ($4::text[])[`+settlePos+`] = 'pending'
        THEN `+nowSQL+` + ($5::bigint[])[`+settlePos+`] * interval '1 microsecond' ELSE o.available_at END,
    last_error = CASE WHEN ($4::text[])[`+settlePos+`] = 'done' THEN o.last_error ELSE ($6::text[])[`+settlePos+`] END,
    claimed_until = NULL, claim_token = NULL
WHERE o.id = ANY($2::bigint[]) AND o.state = 'claimed' AND o.claim_token = ($3::text[])[`+settlePos+`]
RETURNING o.id`, nullTime(p.Now), ids, tokens, states, delays, errs)
	return markChanged(res, at, rows, err, "settle outbox rows")
}

// markChanged sets res.Changed for each row rows returns (its id or key,
// at its position in at) and returns res, or the statement's error (err,
// or one met reading rows) interpreted as op's.
func markChanged[K comparable](res *stores.OutboxSettleResult, at map[K]int, rows pgx.Rows, err error, op string) (*stores.OutboxSettleResult, error) {
	if err != nil {
		return nil, interpretError(op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k K
		if err := rows.Scan(&k); err != nil {
			return nil, interpretError(op, err)
		}
		res.Changed[at[k]] = true
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(op, err)
	}
	return res, nil
}

// settlePos is the position (1-based) of row o in the arrays of
// settleClaimed's statement, found by binary search:
// width_bucket over an ascending array returns how many of its elements
// are <= the operand, the position of o.id when it is there. The ids are
// sorted and unique (Validate checks), and o.id = ANY($2) holds for every
// row it is asked about.
const settlePos = `width_bucket(o.id, $2::bigint[])`

// settleHeld records the outcomes of held rows for
// [Store.SettleOutboxIfClaimedOrHeld] in one UPDATE in its own short transaction. It finds the rows through the
// unique index on idempotency_key (idempotency_key = ANY($2)) and takes
// each row's values at its key's position in the arrays (array_position:
// a key's place among at most a few hundred, not a join, whose generic
// plan could hash the outbox; see settleClaimed). It is
// planned at every call (pgx.QueryExecModeExec), as ClaimOutbox is: a
// generic plan made while the outbox was nearly empty scanned the whole
// outbox for the keys once it had grown (relay PostgreSQL CPU per event in
// the Kafka modes benchmark 170 µs against 60-90 planned each time).
func (s *Store) settleHeld(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error) {
	res := &stores.OutboxSettleResult{Changed: make([]bool, len(p.Rows))}
	if len(p.Rows) == 0 {
		return res, nil
	}
	n := len(p.Rows)
	at := make(map[string]int, n)
	keys, held, states, delays, errs := make([]string, n), make([]time.Time, n), make([]string, n), make([]int64, n), make([]string, n)
	for i, r := range p.Rows {
		at[r.IdempotencyKey] = i
		keys[i], held[i], states[i], delays[i], errs[i] = r.IdempotencyKey, r.HeldUntil.Truncate(time.Microsecond), string(r.State), r.Delay.Microseconds(), r.LastError
	}
	const pos = `array_position($2::text[], o.idempotency_key)`
	rows, err := s.pool.Query(ctx, `UPDATE `+s.names.Outbox+` AS o
SET state = ($4::text[])[`+pos+`], attempts = 1,
    done_at = CASE WHEN ($4::text[])[`+pos+`] = 'done' THEN `+nowSQL+` ELSE o.done_at END,
    available_at = CASE WHEN ($4::text[])[`+pos+`] = 'pending'
        THEN `+nowSQL+` + ($5::bigint[])[`+pos+`] * interval '1 microsecond' ELSE o.available_at END,
    last_error = CASE WHEN ($4::text[])[`+pos+`] = 'done' THEN o.last_error ELSE ($6::text[])[`+pos+`] END
WHERE o.idempotency_key = ANY($2::text[]) AND o.state = 'pending' AND o.attempts = 0
    AND o.available_at = ($3::timestamptz[])[`+pos+`]
RETURNING o.idempotency_key, o.id`, pgx.QueryExecModeExec, nullTime(p.Now), keys, held, states, delays, errs)
	if err != nil {
		return nil, interpretError("settle held outbox rows", err)
	}
	defer rows.Close()
	res.IDs = make([]int64, n)
	for rows.Next() {
		var k string
		var id int64
		if err := rows.Scan(&k, &id); err != nil {
			return nil, interpretError("settle held outbox rows", err)
		}
		res.Changed[at[k]], res.IDs[at[k]] = true, id
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError("settle held outbox rows", err)
	}
	return res, nil
}
