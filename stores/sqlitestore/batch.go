package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/storekit"
)

// outboxRowsPerStatement bounds the rows of one multi-row outbox INSERT,
// keeping its bind parameters (9 per row) under SQLite's limit of 32,766.
const outboxRowsPerStatement = 3000

// BeginInboxMany implements [stores.Store.BeginInboxMany]: BEGIN
// IMMEDIATE (SQLite's one write lock, so concurrent batches take turns),
// one INSERT ... SELECT FROM json_each(?) ON CONFLICT DO NOTHING RETURNING
// event_id, a SELECT of the payload hashes of the rows that existed (only
// when some did), and the savepoint. The rows travel as one JSON
// parameter, hashes in hex.
func (s *Store) BeginInboxMany(ctx context.Context, p *stores.BeginInboxManyParams) (*stores.BeginInboxManyResult[*sql.Tx], error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s.stmts.prepare(ctx)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, beginError(err)
	}
	res, err := s.insertInboxMany(ctx, tx, p)
	if err == nil && len(p.Progress) > 0 {
		err = s.writeProgress(ctx, tx, p.Consumer, stores.MergeProgress(p.Progress))
	}
	if err == nil && p.Savepoint != "" {
		err = s.SavepointTx(ctx, tx, p.Savepoint)
	}
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	res.Tx = tx
	return res, nil
}

func (s *Store) insertInboxMany(ctx context.Context, tx *sql.Tx, p *stores.BeginInboxManyParams) (*stores.BeginInboxManyResult[*sql.Tx], error) {
	res := &stores.BeginInboxManyResult[*sql.Tx]{Rows: make([]stores.InboxManyOutcome, len(p.Rows))}
	inserted := make(map[string]struct{}, len(p.Rows))
	if len(p.Rows) > 0 {
		rows := make([][3]any, len(p.Rows))
		for i, r := range p.Rows {
			var trace any
			if r.TraceParent != "" {
				trace = r.TraceParent
			}
			rows[i] = [3]any{r.EventID, hexOrNil(r.PayloadHash), trace}
		}
		js, err := json.Marshal(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: insert inbox rows: %w", err)
		}
		if err := s.queryStrings(ctx, tx, `INSERT INTO `+s.names.Inbox+` (consumer, event_id, payload_hash, received_at, trace_parent)
SELECT ?1, j.value ->> 0, unhex(j.value ->> 1), ?2, j.value ->> 2 FROM json_each(?3) AS j WHERE true
ON CONFLICT DO NOTHING RETURNING event_id`, []any{p.Consumer, micros(p.Now), string(js)}, func(id string) { inserted[id] = struct{}{} }); err != nil {
			return nil, interpretError("insert inbox rows", err)
		}
	}
	var dups []string
	for _, r := range p.Rows {
		if _, ok := inserted[r.EventID]; !ok {
			dups = append(dups, r.EventID)
		}
	}
	if len(dups) == 0 {
		return res, nil
	}
	stored, traces, err := s.storedInboxRows(ctx, tx, p.Consumer, dups)
	if err != nil {
		return nil, interpretError("read duplicate inbox rows", err)
	}
	for i, r := range p.Rows {
		if _, ok := inserted[r.EventID]; ok {
			continue
		}
		h := stored[r.EventID]
		res.Rows[i] = stores.InboxManyOutcome{Duplicate: true, PayloadMismatch: h != nil && r.PayloadHash != nil && !bytes.Equal(h, r.PayloadHash), StoredHash: h, TraceParent: traces[r.EventID]}
	}
	return res, nil
}

// storedInboxRows returns the payload hashes and trace parents of the
// inbox rows of consumer with the event ids ids.
func (s *Store) storedInboxRows(ctx context.Context, tx *sql.Tx, consumer string, ids []string) (map[string][]byte, map[string]string, error) {
	js, err := json.Marshal(ids)
	if err != nil {
		return nil, nil, err
	}
	rows, err := s.txQuery(ctx, tx, `SELECT event_id, payload_hash, coalesce(trace_parent, '') FROM `+s.names.Inbox+
		` WHERE consumer = ?1 AND event_id IN (SELECT value FROM json_each(?2))`, consumer, string(js))
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	hashes, traces := make(map[string][]byte, len(ids)), make(map[string]string, len(ids))
	for rows.Next() {
		var id, trace string
		var h []byte
		if err := rows.Scan(&id, &h, &trace); err != nil {
			return nil, nil, err
		}
		hashes[id], traces[id] = h, trace
	}
	return hashes, traces, rows.Err()
}

// hashes runs q, which selects (key, hash) pairs, with args and the keys as
// a JSON array last, and returns the hashes by key.
func (s *Store) hashes(ctx context.Context, tx *sql.Tx, q string, args ...any) (map[string][]byte, error) {
	keys := args[len(args)-1].([]string)
	js, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	args[len(args)-1] = string(js)
	rows, err := s.txQuery(ctx, tx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string][]byte, len(keys))
	for rows.Next() {
		var k string
		var h []byte
		if err := rows.Scan(&k, &h); err != nil {
			return nil, err
		}
		out[k] = h
	}
	return out, rows.Err()
}

// queryStrings runs q and calls fn with the one text column of each row.
func (s *Store) queryStrings(ctx context.Context, tx *sql.Tx, q string, args []any, fn func(string)) error {
	rows, err := s.txQuery(ctx, tx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return err
		}
		fn(v)
	}
	return rows.Err()
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
		return fmt.Errorf("sqlitestore: %s: %w", op, err)
	}
	_, err := s.txExec(ctx, tx, verb+storekit.QuoteIdentifier(name))
	return interpretError(op, err)
}

// DeleteInboxTx implements [stores.Store.DeleteInboxTx]: one DELETE
// whose event ids come as a JSON array (json_each).
func (s *Store) DeleteInboxTx(ctx context.Context, tx *sql.Tx, p *stores.DeleteInboxParams) (*stores.DeleteInboxResult, error) {
	if len(p.EventIDs) == 0 {
		return &stores.DeleteInboxResult{}, nil
	}
	ids, err := json.Marshal(p.EventIDs)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: delete inbox rows: %w", err)
	}
	res, err := s.txExec(ctx, tx, `DELETE FROM `+s.names.Inbox+` WHERE consumer = ?1 AND event_id IN (SELECT value FROM json_each(?2))`,
		p.Consumer, string(ids))
	if err != nil {
		return nil, interpretError("delete inbox rows", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, interpretError("delete inbox rows", err)
	}
	return &stores.DeleteInboxResult{Deleted: n}, nil
}

// InsertOutboxManyTx implements [stores.Store.InsertOutboxManyTx]:
// one multi-row INSERT ... VALUES ON CONFLICT DO NOTHING RETURNING the
// keys it inserted per 3,000 rows (SQLite allows 32,766 bind parameters),
// with anonymous "?" parameters: modernc.org/sqlite looks every numbered
// parameter ("?N") up in a list when binding, which costs a statement of
// thousands of them more than running it. When some rows were not
// inserted, a SELECT of their payload hashes tells duplicates from
// conflicts.
func (s *Store) InsertOutboxManyTx(ctx context.Context, tx *sql.Tx, p *stores.OutboxInsertManyParams) (*stores.OutboxInsertManyResult, error) {
	plan, err := storekit.PlanOutboxMany(p)
	if err != nil {
		return nil, err
	}
	inserted := make(map[string]struct{}, len(plan.Rows))
	for start := 0; start < len(plan.Rows); start += outboxRowsPerStatement {
		end := min(start+outboxRowsPerStatement, len(plan.Rows))
		var q strings.Builder
		q.WriteString(`INSERT INTO ` + s.names.Outbox +
			` (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at) VALUES `)
		args := make([]any, 0, 9*(end-start))
		for j := start; j < end; j++ {
			r := &p.Rows[plan.Rows[j]]
			headers := "{}"
			if r.Headers != nil {
				b, err := json.Marshal(r.Headers)
				if err != nil {
					return nil, fmt.Errorf("outbox headers: %w", err)
				}
				headers = string(b)
			}
			payload := r.Payload
			if payload == nil {
				payload = []byte{}
			}
			now := r.Now
			if now.IsZero() {
				now = time.Now()
			}
			available := r.AvailableAt
			if available.IsZero() {
				available = now
			}
			if j > start {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, r.Kind, r.IdempotencyKey, payload, plan.Hashes[j], headers, r.Consumer, r.EventID,
				now.UnixMicro(), available.UnixMicro())
		}
		q.WriteString(` ON CONFLICT (idempotency_key) DO NOTHING RETURNING idempotency_key`)
		if err := s.queryStrings(ctx, tx, q.String(), args, func(k string) { inserted[k] = struct{}{} }); err != nil {
			return nil, interpretError("insert outbox rows", err)
		}
	}
	if len(inserted) == len(plan.Rows) {
		return &stores.OutboxInsertManyResult{Duplicate: plan.Duplicate}, nil
	}
	var existing []string
	for _, i := range plan.Rows {
		if _, ok := inserted[p.Rows[i].IdempotencyKey]; !ok {
			existing = append(existing, p.Rows[i].IdempotencyKey)
		}
	}
	stored, err := s.hashes(ctx, tx, `SELECT idempotency_key, payload_hash FROM `+s.names.Outbox+
		` WHERE idempotency_key IN (SELECT value FROM json_each(?1))`, existing)
	if err != nil {
		return nil, interpretError("read outbox rows", err)
	}
	return plan.Settle(p, inserted, stored)
}

// hexOrNil returns b in hex, or nil (JSON null, SQL NULL) for nil b.
func hexOrNil(b []byte) any {
	if b == nil {
		return nil
	}
	return hex.EncodeToString(b)
}
