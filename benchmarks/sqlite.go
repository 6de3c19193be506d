package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
	"github.com/ackgap/ackgap/stores/storekit"
)

// The hand-written SQL of the SQLite workloads: sqlitestore's statements,
// character for character.
const (
	liteInboxInsert = `INSERT INTO "ackgap_inbox" (consumer, event_id, payload_hash, received_at, trace_parent)
VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING`
	liteTransition   = `UPDATE "orders" SET "status" = ?1, "version" = "version" + 1 WHERE "id" = ?2 AND "status" IN (?3)`
	liteState        = `SELECT "status" FROM "orders" WHERE "id" = ?1`
	liteOutboxInsert = `INSERT INTO "ackgap_outbox" (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`
	liteOutboxExisting = `SELECT id, payload_hash FROM "ackgap_outbox" WHERE idempotency_key = ?1`
)

// sqlite is the SQLite backend: a database file in a temporary directory,
// removed by close, opened with sqlitestore.Open's defaults (WAL,
// synchronous NORMAL, BEGIN IMMEDIATE); the hand-written workloads share
// the store's *sql.DB.
type sqlite struct {
	dir   string
	store *sqlitestore.Store
	db    *sql.DB
	// prepared holds the ceiling's statements, prepared once (the
	// hand-written workload runs them unprepared, as database/sql code
	// usually does: modernc.org/sqlite then parses them every time).
	prepared map[string]*sql.Stmt
}

var _ backend = (*sqlite)(nil)

func openSQLite(ctx context.Context) (*sqlite, error) {
	dir, err := os.MkdirTemp("", "ackgap-bench-")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	s := &sqlite{dir: dir}
	if s.store, err = sqlitestore.Open(ctx, filepath.Join(dir, "bench.db"), nil); err == nil {
		s.db = s.store.DB()
		_, err = s.store.Migrate(ctx, &stores.MigrateParams{})
	}
	if err == nil {
		_, err = s.db.ExecContext(ctx, orders.DDL)
	}
	s.prepared = map[string]*sql.Stmt{}
	for _, q := range []string{liteInboxInsert, liteTransition, liteState, liteOutboxInsert, liteOutboxExisting} {
		if err != nil {
			break
		}
		s.prepared[q], err = s.db.PrepareContext(ctx, q)
	}
	if err != nil {
		_ = s.close()
		return nil, fmt.Errorf("sqlite: setup: %w", err)
	}
	return s, nil
}

func (s *sqlite) name() string { return "sqlite" }

func (s *sqlite) close() error {
	var err error
	for _, st := range s.prepared {
		err = errors.Join(err, st.Close())
	}
	if s.store != nil {
		err = s.store.Close()
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}

func (s *sqlite) reset(ctx context.Context, orderIDs []string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: reset: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, q := range []string{`DELETE FROM "ackgap_inbox"`, `DELETE FROM "ackgap_outbox"`, `DELETE FROM orders`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlite: reset: %w", err)
		}
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO orders (id, status, amount_cents, email) VALUES (?1, ?2, ?3, ?4)`)
	if err != nil {
		return fmt.Errorf("sqlite: seed orders: %w", err)
	}
	defer ins.Close()
	for i, id := range orderIDs {
		if _, err := ins.ExecContext(ctx, id, statusPending, int64(100+i%9900), id+"@example.com"); err != nil {
			return fmt.Errorf("sqlite: seed orders: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: seed orders: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("sqlite: checkpoint: %w", err)
	}
	return nil
}

func (s *sqlite) counts(ctx context.Context) (counts, error) {
	var c counts
	err := s.db.QueryRowContext(ctx, `SELECT
    (SELECT COALESCE(sum(version), 0) FROM orders),
    (SELECT count(*) FROM "ackgap_outbox" WHERE kind = ?1),
    (SELECT count(*) FROM "ackgap_outbox" WHERE kind = ?2),
    (SELECT count(*) FROM "ackgap_inbox")`, kindCharge, kindReceipt).
		Scan(&c.transitions, &c.charges, &c.receipts, &c.inbox)
	if err != nil {
		return c, fmt.Errorf("sqlite: counts: %w", err)
	}
	return c, nil
}

func (s *sqlite) safeRouter(cfg *router.Config, sub message.Subscriber, topics []string, queue, inboxOnly bool) (runner, error) {
	h := chargeOrder[*sql.Tx](queue)
	if inboxOnly {
		h = noop[*sql.Tx]
	}
	return newSafeRouter(s.store, cfg, sub, topics, h)
}

func (s *sqlite) unsafe(msg *message.Message) error {
	ev, err := decode(msg)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(msg.Context(), liteTransition, statusCharging, ev.OrderID, statusPending)
	return err
}

func (s *sqlite) handWritten(msg *message.Message) error {
	ev, err := decode(msg)
	if err != nil {
		return err
	}
	id := msg.Metadata.Get(eventIDKey)
	if id == "" {
		return ackgap.Permanent(ackgap.ReasonMissingEventID, ackgap.ErrMissingEventID)
	}
	return s.apply(msg.Context(), id, msg.Payload, &ev, false)
}

// ceiling runs the hand-written transaction with no framework and
// prepared statements: SQLite has no round trips to save, so the ceiling
// is the same SQL called directly.
func (s *sqlite) ceiling(ctx context.Context, ev *event) error {
	var body orderPlaced
	if err := json.Unmarshal(ev.payload, &body); err != nil {
		return err
	}
	return s.apply(ctx, ev.eventID, ev.payload, &body, true)
}

// apply is the safe pattern by hand: BEGIN IMMEDIATE, inbox insert,
// guarded UPDATE, two outbox inserts, COMMIT; with the prepared
// statements when prepared is true.
func (s *sqlite) apply(ctx context.Context, id string, payload []byte, ev *orderPlaced, prepared bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	stmt := func(q string) *sql.Stmt {
		if prepared {
			return tx.StmtContext(ctx, s.prepared[q])
		}
		return nil
	}
	exec := func(q string, args ...any) (sql.Result, error) {
		if st := stmt(q); st != nil {
			return st.ExecContext(ctx, args...)
		}
		return tx.ExecContext(ctx, q, args...)
	}
	queryRow := func(q string, args ...any) *sql.Row {
		if st := stmt(q); st != nil {
			return st.QueryRowContext(ctx, args...)
		}
		return tx.QueryRowContext(ctx, q, args...)
	}
	now := time.Now().UnixMicro()
	res, err := exec(liteInboxInsert, consumer, id, payloadHash(payload), now, nil)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // a duplicate (nil): roll back, ack
	}
	res, err = exec(liteTransition, statusCharging, ev.OrderID, statusPending)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		var state string
		if err := queryRow(liteState, ev.OrderID).Scan(&state); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if state != statusCharging {
			return ackgap.Permanent(ackgap.ReasonTransitionRefused, ackgap.ErrTransitionRefused)
		}
		return tx.Commit()
	}
	chargeKey, charge, receiptKey, receipt, err := effects(ev)
	if err != nil {
		return err
	}
	for _, row := range []struct {
		kind, key string
		payload   []byte
	}{{kindCharge, chargeKey, charge}, {kindReceipt, receiptKey, receipt}} {
		hash := payloadHash(row.payload)
		var rowID int64
		err := queryRow(liteOutboxInsert, row.kind, row.key, row.payload, hash, outboxHeadersJSON, consumer, id, now, now).Scan(&rowID)
		if errors.Is(err, sql.ErrNoRows) {
			var stored []byte
			if err := queryRow(liteOutboxExisting, row.key).Scan(&rowID, &stored); err != nil {
				return err
			}
			if string(stored) != string(hash) {
				return storekit.IdempotencyConflict(row.key)
			}
			err = nil
		}
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (s *sqlite) serverCPU() (time.Duration, bool) { return 0, false }

func (s *sqlite) facts(ctx context.Context) ([]fact, error) {
	var version, journal string
	var syncMode, busy int
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&version); err != nil {
		return nil, err
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&journal); err != nil {
		return nil, err
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&syncMode); err != nil {
		return nil, err
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
		return nil, err
	}
	syncNames := map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
	return []fact{
		{"SQLite", version + " (modernc.org/sqlite, pure Go)"},
		{"SQLite settings", fmt.Sprintf("journal_mode %s, synchronous %s, busy_timeout %s ms, BEGIN IMMEDIATE, %d connections (sqlitestore.Open defaults)",
			journal, syncNames[syncMode], strconv.Itoa(busy), s.db.Stats().MaxOpenConnections)},
	}, nil
}
