// Package sqldb holds what the database/sql stores (sqlitestore,
// mysqlstore) share beyond SQL text: scanning outbox rows, the per-row
// settle loop, claim tokens and reading the migration table. It imports
// no driver.
package sqldb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ackgap/ackgap/stores"
)

// OutboxColumns are the columns ScanRow reads, in its order; times are
// Unix microseconds.
const OutboxColumns = `id, kind, idempotency_key, payload, headers, consumer, event_id, state,
attempts, last_error, created_at, available_at`

// RowScanner is *sql.Rows or *sql.Row.
type RowScanner interface{ Scan(dest ...any) error }

// ScanRow scans OutboxColumns into r, then extra.
func ScanRow(rows RowScanner, r *stores.OutboxRow, extra ...any) error {
	var headers, state string
	var created, available int64
	dest := append([]any{&r.ID, &r.Kind, &r.IdempotencyKey, &r.Payload, &headers, &r.Consumer, &r.EventID,
		&state, &r.Attempts, &r.LastError, &created, &available}, extra...)
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	r.State = stores.OutboxState(state)
	r.Now = time.UnixMicro(created)
	r.AvailableAt = time.UnixMicro(available)
	if err := json.Unmarshal([]byte(headers), &r.Headers); err != nil {
		return fmt.Errorf("outbox row %d: headers: %w", r.ID, err)
	}
	return nil
}

// QueryOutbox runs q on db, which selects OutboxColumns, and scans its
// rows; interpret translates the driver's errors (the store's
// interpretError).
func QueryOutbox(ctx context.Context, db *sql.DB, interpret func(op string, err error) error, op, q string, args ...any) ([]stores.OutboxRow, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, interpret(op, err)
	}
	defer rows.Close()
	var out []stores.OutboxRow
	for rows.Next() {
		var r stores.OutboxRow
		if err := ScanRow(rows, &r); err != nil {
			return nil, interpret(op, err)
		}
		out = append(out, r)
	}
	return out, interpret(op, rows.Err())
}

// SettleRows runs query, prepared once in tx, for each of n rows with the
// arguments args(i), and reports per row whether it affected exactly one.
func SettleRows(ctx context.Context, tx *sql.Tx, query string, n int, args func(i int) []any) ([]bool, error) {
	changed := make([]bool, n)
	stmt, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	for i := range n {
		out, err := stmt.ExecContext(ctx, args(i)...)
		if err != nil {
			return nil, err
		}
		c, err := out.RowsAffected()
		if err != nil {
			return nil, err
		}
		changed[i] = c == 1
	}
	return changed, nil
}

// NewClaimToken returns 16 random bytes as 32 hex digits.
func NewClaimToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("claim token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// AppliedVersions reads version and applied_at (Unix microseconds) of
// every row of the migration table named table (quoted).
func AppliedVersions(ctx context.Context, db *sql.DB, table string) (map[int]time.Time, error) {
	applied := map[int]time.Time{}
	rows, err := db.QueryContext(ctx, `SELECT version, applied_at FROM `+table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		applied[v] = time.UnixMicro(at)
	}
	return applied, rows.Err()
}
