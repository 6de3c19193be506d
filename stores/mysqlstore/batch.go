package mysqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/storekit"
)

// rowsPerStatement bounds the rows of one multi-row statement, keeping its
// bind parameters (at most 10 per row) under the protocol's 65,535.
const rowsPerStatement = 5000

// BeginInboxMany implements [stores.Store.BeginInboxMany] with
// set-based statements in one READ COMMITTED transaction: a SELECT of the
// batch's inbox rows that exist, one multi-row INSERT of the others, and
// the savepoint. When a concurrent batch inserted one of those rows in
// between, the INSERT fails with 1062 (only the statement is rolled back)
// and the rows are inserted one by one, each 1062 a duplicate. INSERT
// IGNORE is not used: it would also turn NULL, truncation and foreign-key
// errors into warnings.
//
// The rows are inserted in event id order, so concurrent batches take
// their locks in one order; InnoDB's duplicate-key checks can still
// deadlock a few of them (1213, the transaction rolled back). The
// transaction then held only this call's inserts, so it is begun again,
// up to inboxDeadlockAttempts times in all, before the 1213 is returned
// (store-unavailable: redelivered).
func (s *Store) BeginInboxMany(ctx context.Context, p *stores.BeginInboxManyParams) (*stores.BeginInboxManyResult[*sql.Tx], error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		tx, err := s.begin(ctx)
		if err != nil {
			return nil, err
		}
		res, err := s.insertInboxMany(ctx, tx, p)
		if err == nil && p.Savepoint != "" {
			err = s.SavepointTx(ctx, tx, p.Savepoint)
		}
		if err != nil {
			_ = tx.Rollback()
			if isCode(err, erLockDeadlock) && attempt < inboxDeadlockAttempts && ctx.Err() == nil {
				continue
			}
			return nil, err
		}
		s.holdProgress(tx, p.Consumer, stores.MergeProgress(p.Progress))
		res.Tx = tx
		return res, nil
	}
}

// inboxDeadlockAttempts bounds how many times BeginInboxMany begins its
// transaction when InnoDB picks it as a deadlock's victim.
const inboxDeadlockAttempts = 3

func (s *Store) insertInboxMany(ctx context.Context, tx *sql.Tx, p *stores.BeginInboxManyParams) (*stores.BeginInboxManyResult[*sql.Tx], error) {
	res := &stores.BeginInboxManyResult[*sql.Tx]{Rows: make([]stores.InboxManyOutcome, len(p.Rows))}
	if len(p.Rows) == 0 {
		return res, nil
	}
	ids := make([]string, len(p.Rows))
	for i, r := range p.Rows {
		ids[i] = r.EventID
	}
	stored, traces, err := s.storedInboxRows(ctx, tx, p.Consumer, ids)
	if err != nil {
		return nil, interpretError("read inbox rows", err)
	}
	var missing []int
	seen := map[string]bool{}
	for i, r := range p.Rows {
		if _, ok := stored[r.EventID]; !ok && !seen[r.EventID] {
			seen[r.EventID] = true
			missing = append(missing, i)
		}
	}
	// Inserted in event id order, so that concurrent batches with keys in
	// common take their locks in one order and wait for each other instead
	// of deadlocking (1213), as pgxstore's ORDER BY does.
	slices.SortFunc(missing, func(a, b int) int { return strings.Compare(p.Rows[a].EventID, p.Rows[b].EventID) })
	now := micros(p.Now)
	values := func(i int) []any {
		r := &p.Rows[i]
		var trace any
		if r.TraceParent != "" {
			trace = r.TraceParent
		}
		return []any{p.Consumer, r.EventID, r.PayloadHash, now, trace}
	}
	insert := `INSERT INTO ` + s.names.Inbox + ` (consumer, event_id, payload_hash, received_at, trace_parent) VALUES `
	done, err := s.insertRows(ctx, tx, insert, "(?, ?, ?, ?, ?)", missing, values)
	if isCode(err, erDupEntry) {
		// A concurrent batch won some rows: the rest one by one, each 1062
		// a duplicate.
		var lost []string
		for _, i := range missing[done:] {
			if _, err := tx.ExecContext(ctx, insert+"(?, ?, ?, ?, ?)", values(i)...); err != nil {
				if !isCode(err, erDupEntry) {
					return nil, interpretError("insert inbox rows", err)
				}
				lost = append(lost, p.Rows[i].EventID)
			}
		}
		more, moreTraces, rerr := s.storedInboxRows(ctx, tx, p.Consumer, lost)
		if rerr != nil {
			return nil, interpretError("read inbox rows", rerr)
		}
		for id, h := range more {
			stored[id], traces[id] = h, moreTraces[id]
		}
		err = nil
	}
	if err != nil {
		return nil, interpretError("insert inbox rows", err)
	}
	for i, r := range p.Rows {
		h, ok := stored[r.EventID]
		if !ok {
			continue
		}
		res.Rows[i] = stores.InboxManyOutcome{Duplicate: true, PayloadMismatch: h != nil && r.PayloadHash != nil && !bytes.Equal(h, r.PayloadHash), StoredHash: h, TraceParent: traces[r.EventID]}
	}
	return res, nil
}

// insertRows runs insert (ending in VALUES) with one row tuple per index
// of idx, rowsPerStatement rows a statement. It returns how many of idx
// the statements that succeeded inserted: a failed statement rolled back
// alone, so the rows before it stand.
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, insert, tuple string, idx []int, values func(i int) []any) (int, error) {
	for start := 0; start < len(idx); start += rowsPerStatement {
		end := min(start+rowsPerStatement, len(idx))
		var q strings.Builder
		q.WriteString(insert)
		var args []any
		for j := start; j < end; j++ {
			if j > start {
				q.WriteString(", ")
			}
			q.WriteString(tuple)
			args = append(args, values(idx[j])...)
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return start, err
		}
	}
	return len(idx), nil
}

// storedInboxRows returns the payload hashes (a nil hash stored as
// []byte(nil) but present in the map) and trace parents of the inbox rows
// of consumer with the event ids ids.
func (s *Store) storedInboxRows(ctx context.Context, tx *sql.Tx, consumer string, ids []string) (map[string][]byte, map[string]string, error) {
	hashes, traces := make(map[string][]byte, len(ids)), make(map[string]string, len(ids))
	for start := 0; start < len(ids); start += rowsPerStatement {
		chunk := ids[start:min(start+rowsPerStatement, len(ids))]
		rows, err := tx.QueryContext(ctx, `SELECT event_id, payload_hash, COALESCE(trace_parent, '') FROM `+s.names.Inbox+
			` WHERE consumer = ? AND event_id IN (`+placeholders(len(chunk))+`)`, append([]any{consumer}, anys(chunk)...)...)
		if err != nil {
			return nil, nil, err
		}
		for rows.Next() {
			var id, trace string
			var h []byte
			if err := rows.Scan(&id, &h, &trace); err != nil {
				rows.Close()
				return nil, nil, err
			}
			hashes[id], traces[id] = h, trace
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	return hashes, traces, nil
}

// SavepointTx implements [stores.Store.SavepointTx].
func (s *Store) SavepointTx(ctx context.Context, tx *sql.Tx, name string) error {
	return s.savepointExec(ctx, tx, "savepoint", "SAVEPOINT ", name)
}

// RollbackToSavepointTx implements [stores.Store.RollbackToSavepointTx].
func (s *Store) RollbackToSavepointTx(ctx context.Context, tx *sql.Tx, name string) error {
	return s.savepointExec(ctx, tx, "rollback to savepoint", "ROLLBACK TO SAVEPOINT ", name)
}

// ReleaseSavepointTx implements [stores.Store.ReleaseSavepointTx].
func (s *Store) ReleaseSavepointTx(ctx context.Context, tx *sql.Tx, name string) error {
	return s.savepointExec(ctx, tx, "release savepoint", "RELEASE SAVEPOINT ", name)
}

func (s *Store) savepointExec(ctx context.Context, tx *sql.Tx, op, verb, name string) error {
	if err := storekit.ValidIdentifier("savepoint name", name); err != nil {
		return fmt.Errorf("mysqlstore: %s: %w", op, err)
	}
	_, err := tx.ExecContext(ctx, verb+storekit.QuoteIdentifier(name))
	return interpretError(op, err)
}

// DeleteInboxTx implements [stores.Store.DeleteInboxTx]: one DELETE
// ... WHERE event_id IN (...) per 5,000 ids.
func (s *Store) DeleteInboxTx(ctx context.Context, tx *sql.Tx, p *stores.DeleteInboxParams) (*stores.DeleteInboxResult, error) {
	var total int64
	for start := 0; start < len(p.EventIDs); start += rowsPerStatement {
		chunk := p.EventIDs[start:min(start+rowsPerStatement, len(p.EventIDs))]
		res, err := tx.ExecContext(ctx, `DELETE FROM `+s.names.Inbox+` WHERE consumer = ? AND event_id IN (`+placeholders(len(chunk))+`)`,
			append([]any{p.Consumer}, anys(chunk)...)...)
		if err != nil {
			return nil, interpretError("delete inbox rows", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, interpretError("delete inbox rows", err)
		}
		total += n
	}
	return &stores.DeleteInboxResult{Deleted: total}, nil
}

// InsertOutboxManyTx implements [stores.Store.InsertOutboxManyTx]
// with set-based statements: a SELECT of the keys that exist, one
// multi-row INSERT of the others per 5,000 rows; on 1062 (a concurrent
// writer took a key in between) the rows go one by one. Stored hashes
// tell duplicates from conflicts.
func (s *Store) InsertOutboxManyTx(ctx context.Context, tx *sql.Tx, p *stores.OutboxInsertManyParams) (*stores.OutboxInsertManyResult, error) {
	plan, err := storekit.PlanOutboxMany(p)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(plan.Rows))
	for j, i := range plan.Rows {
		keys[j] = p.Rows[i].IdempotencyKey
	}
	stored, err := s.outboxHashes(ctx, tx, keys)
	if err != nil {
		return nil, interpretError("read outbox rows", err)
	}
	var missing []int // indexes into plan.Rows
	for j, k := range keys {
		if _, ok := stored[k]; !ok {
			missing = append(missing, j)
		}
	}
	slices.SortFunc(missing, func(a, b int) int { return strings.Compare(keys[a], keys[b]) }) // one lock order (see insertInboxMany)
	values := func(j int) []any {
		v, _ := outboxValues(&p.Rows[plan.Rows[j]], plan.Hashes[j])
		return v
	}
	for _, j := range missing { // headers that do not marshal fail here, before any insert
		if _, err := outboxValues(&p.Rows[plan.Rows[j]], plan.Hashes[j]); err != nil {
			return nil, err
		}
	}
	insert := `INSERT INTO ` + s.names.Outbox + outboxInsertColumns
	inserted := make(map[string]struct{}, len(missing))
	done, err := s.insertRows(ctx, tx, insert, outboxValuesRow, missing, values)
	for _, j := range missing[:done] {
		inserted[keys[j]] = struct{}{}
	}
	switch {
	case err == nil:
	case isCode(err, erDupEntry):
		var lost []string
		for _, j := range missing[done:] {
			if _, err := tx.ExecContext(ctx, insert+outboxValuesRow, values(j)...); err != nil {
				if !isCode(err, erDupEntry) {
					return nil, interpretError("insert outbox rows", err)
				}
				lost = append(lost, keys[j])
				continue
			}
			inserted[keys[j]] = struct{}{}
		}
		more, err := s.outboxHashes(ctx, tx, lost)
		if err != nil {
			return nil, interpretError("read outbox rows", err)
		}
		for k, h := range more {
			stored[k] = h
		}
	default:
		return nil, interpretError("insert outbox rows", err)
	}
	return plan.Settle(p, inserted, stored)
}

// outboxHashes returns the payload hashes of the outbox rows with the
// idempotency keys keys.
func (s *Store) outboxHashes(ctx context.Context, tx *sql.Tx, keys []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(keys))
	for start := 0; start < len(keys); start += rowsPerStatement {
		chunk := keys[start:min(start+rowsPerStatement, len(keys))]
		rows, err := tx.QueryContext(ctx, `SELECT idempotency_key, payload_hash FROM `+s.names.Outbox+
			` WHERE idempotency_key IN (`+placeholders(len(chunk))+`)`, anys(chunk)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k string
			var h []byte
			if err := rows.Scan(&k, &h); err != nil {
				rows.Close()
				return nil, err
			}
			out[k] = h
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
