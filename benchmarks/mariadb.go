package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/go-sql-driver/mysql"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
	"github.com/ackgap/ackgap/stores/storekit"
)

// mariaDSNDefault is -mariadb-dsn's default: the server of
// $TEST_MYSQL_DSN, else this project's local MariaDB (the harness creates
// a database of its own on it and drops it after).
const mariaDSNDefault = "root@tcp(127.0.0.1:3306)/test"

// The hand-written SQL of the MariaDB workloads: the statements mysqlstore
// sends for the same work, character for character (its connections run
// with ANSI_QUOTES), so the server parses and runs the same thing whoever
// sends it. A duplicate key is error 1062, which rolls back only the
// statement on InnoDB: no savepoint, no ON CONFLICT.
const (
	myInboxInsert = `INSERT INTO "ackgap_inbox" (consumer, event_id, payload_hash, received_at, trace_parent)
VALUES (?, ?, ?, ?, ?)`
	// myTransition is what sqlbuild.Transition renders for the billing
	// handler's TransitionParams with "?" placeholders.
	myTransition = `UPDATE "orders" SET "status" = ?, "version" = "version" + 1 WHERE "id" = ? AND "status" IN (?)`
	myState      = `SELECT "status" FROM "orders" WHERE "id" = ?`
	// myOutboxInsert is mysqlstore's single-row outbox insert statement; 1062 on the
	// idempotency key is then read back (myOutboxExisting) to tell a
	// duplicate from another payload.
	myOutboxInsert   = `INSERT INTO "ackgap_outbox" (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, last_error, created_at, available_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	myOutboxExisting = `SELECT id, payload_hash FROM "ackgap_outbox" WHERE idempotency_key = ?`
	// myOutboxCeiling inserts both outbox rows in one statement: a key
	// that exists with the same payload hash is left as it is (a
	// duplicate); with another hash the assignment of NULL to a NOT NULL
	// column fails the statement (strict sql_mode), and the ROLLBACK that
	// follows undoes the transaction, as pgOutboxQueued's division by zero
	// does on PostgreSQL.
	myOutboxCeiling = `INSERT INTO "ackgap_outbox" (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, last_error, created_at, available_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE payload_hash = IF(payload_hash = VALUES(payload_hash), payload_hash, NULL)`
	// myChargeManyLock and myChargeMany are the set-based guarded
	// transition of the batched workloads on MariaDB, which has no
	// UPDATE ... RETURNING (10.11; MySQL 8 has no RETURNING at all): lock
	// the batch's pending orders and read their ids, then move them.
	// Under READ COMMITTED the locks taken by the SELECT make its rows
	// exactly the ones the UPDATE moves. The "%s" is the batch's "?" list.
	myChargeManyLock = `SELECT "id" FROM "orders" WHERE "id" IN (%s) AND "status" = ? FOR UPDATE`
	myChargeMany     = `UPDATE "orders" SET "status" = ?, "version" = "version" + 1 WHERE "id" IN (%s) AND "status" = ?`
)

// mariaCellsNote is the report's section on how the MariaDB cells are
// made, printed when -stores has mariadb.
const mariaCellsNote = `## The MariaDB cells (issue 23)

The same workloads, plans and checks as on PostgreSQL (benchmarks/mariadb.go), on a database of their own on the server of ` + "`-mariadb-dsn`" + `,
created and dropped by the run, migrated by mysqlstore as shipped. Server CPU is that of the threads serving the pools' connections
(MariaDB runs one thread per connection; their TIDs from information_schema.PROCESSLIST), not InnoDB's background threads.
Between runs the inbox and outbox are emptied with DELETE (purge waited for), not TRUNCATE, which gave them new tablespace files: a run
then measured InnoDB extending the files, during which concurrent inserts queue on the index latch (at concurrency 16, 5 to 10 times
the server CPU per event of the batched cells); a deployed store's tables are not new files.

- ` + "`safe`" + `: the billing handler through ackgap on mysqlstore.Open's pool (READ COMMITTED set once per session, parameters interpolated by
  the driver). mysqlstore does not pipeline: START TRANSACTION, the inbox INSERT, the guarded UPDATE, one INSERT of both outbox rows and
  COMMIT are five round trips (the hand-written handler's are seven). ` + "`safe-addoutbox`" + ` is not run: on MariaDB it sends what ` + "`safe`" + ` sends.
- ` + "`hand-written`" + `: a careful MySQL user's handler on the same pool: BeginTx at READ COMMITTED (SET TRANSACTION, then START TRANSACTION),
  INSERT of the inbox row (1062 = a duplicate: roll back, ack), the guarded UPDATE (no row changed: SELECT the state, applied or refused),
  one INSERT per outbox row (1062: SELECT the stored hash, same payload a duplicate, another a conflict), COMMIT; mysqlstore's SQL
  character for character.
- ` + "`ceiling`" + `: the same writes in one round trip, on a pool of its own with multiStatements and interpolateParams: SET TRANSACTION
  ISOLATION LEVEL READ COMMITTED; START TRANSACTION; INSERT IGNORE of the inbox row; the guarded UPDATE; both outbox rows in one INSERT
  ... ON DUPLICATE KEY UPDATE that fails (NULL into NOT NULL) when a key exists with another payload; COMMIT. A copy runs every statement
  and writes nothing; a failed statement ends the batch and the connection is rolled back.
- ` + "`unsafe`" + `: the guarded UPDATE alone in autocommit.
- ` + "`safe-batched`" + ` (and ` + "`safe-batched-10`" + `): batch.Processor on mysqlstore (inbox rows by one SELECT and one multi-row INSERT, outbox rows
  likewise) with the set-based transition written for MariaDB, which has no UPDATE ... RETURNING: SELECT id ... WHERE id IN (...) AND
  status = 'pending' FOR UPDATE, then UPDATE ... WHERE id IN (...) AND status = 'pending' (the locks make the SELECT's rows the moved ones).
`

// mariadb is the MariaDB backend: a database of its own on the server of
// -mariadb-dsn, dropped by close, migrated as shipped, served by
// mysqlstore.Open's pool (READ COMMITTED per transaction, ANSI_QUOTES).
// The hand-written and unsafe workloads share the store's *sql.DB; the
// ceiling has a pool of its own whose connections accept several
// statements per round trip (multiStatements, interpolateParams).
type mariadb struct {
	admin  *mysql.Config // the server, database "test" (or -mariadb-dsn's)
	dbName string
	store  *mysqlstore.Store
	db     *sql.DB
	multi  *sql.DB
	tids   []int // the OS threads (one-thread-per-connection) of db's and multi's connections
}

var _ backend = (*mariadb)(nil)

// openMariaDB creates database ackgap_bench_<random> on the server of dsn
// (either form mysqlstore.ParseDSN accepts), a store pool of maxConns
// connections, ackgap's tables (store.Migrate) and the orders table.
func openMariaDB(ctx context.Context, dsn string, maxConns int) (*mariadb, error) {
	cfg, err := mysqlstore.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	m := &mariadb{admin: cfg, dbName: "ackgap_bench_" + hex.EncodeToString(b)}
	if err := m.adminExec(ctx, "CREATE DATABASE "+m.dbName); err != nil {
		return nil, err
	}
	own := cfg.Clone()
	own.DBName = m.dbName
	if m.store, err = mysqlstore.Open(ctx, own.FormatDSN(), &mysqlstore.Config{MaxOpenConns: maxConns}); err != nil {
		_ = m.close()
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	m.db = m.store.DB()
	m.db.SetConnMaxLifetime(0) // keep the connections, so that their threads are the ones counted
	multi := own.Clone()
	multi.MultiStatements, multi.InterpolateParams = true, true
	conn, err := mysql.NewConnector(multi)
	if err == nil {
		m.multi = sql.OpenDB(conn)
		m.multi.SetMaxOpenConns(maxConns)
		m.multi.SetMaxIdleConns(maxConns)
		_, err = m.store.Migrate(ctx, &stores.MigrateParams{})
	}
	if err == nil {
		_, err = m.db.ExecContext(ctx, orders.DDL)
	}
	if err == nil {
		err = m.connectAll(ctx)
	}
	if err != nil {
		_ = m.close()
		return nil, fmt.Errorf("mariadb: setup: %w", err)
	}
	return m, nil
}

// connectAll opens every connection of both pools now, so that no run
// pays for connecting, and records each one's OS thread (TID in
// information_schema.PROCESSLIST, MariaDB 10.5+) for serverCPU.
func (m *mariadb) connectAll(ctx context.Context) error {
	for _, db := range []*sql.DB{m.db, m.multi} {
		n := db.Stats().MaxOpenConnections
		conns := make([]*sql.Conn, 0, n)
		for range n {
			c, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			conns = append(conns, c)
			var tid sql.NullInt64
			if err := c.QueryRowContext(ctx, `SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()`).Scan(&tid); err == nil && tid.Valid {
				m.tids = append(m.tids, int(tid.Int64))
			}
		}
		for _, c := range conns {
			_ = c.Close()
		}
	}
	return nil
}

// serverCPU sums the CPU time of the pools' server threads. MariaDB runs a
// thread per connection (thread_handling one-thread-per-connection, the
// default); InnoDB's background threads are not counted, as PostgreSQL's
// WAL writer is not.
func (m *mariadb) serverCPU() (time.Duration, bool) {
	pids := make([]uint32, len(m.tids))
	for i, t := range m.tids {
		pids[i] = uint32(t)
	}
	return schedCPU(pids)
}

// adminExec runs stmt on a connection of its own to the server of
// -mariadb-dsn.
func (m *mariadb) adminExec(ctx context.Context, stmt string) error {
	conn, err := mysql.NewConnector(m.admin)
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("mariadb: %s: %w (is MariaDB running? see -mariadb-dsn)", stmt, err)
	}
	return nil
}

func (m *mariadb) name() string { return "mariadb" }

func (m *mariadb) close() error {
	var err error
	if m.multi != nil {
		err = m.multi.Close()
	}
	if m.store != nil {
		err = errors.Join(err, m.store.Close())
	}
	return errors.Join(err, m.adminExec(context.Background(), "DROP DATABASE IF EXISTS "+m.dbName))
}

// reset empties the tables and inserts the orders, 1,000 a statement.
// The inbox and outbox are emptied with DELETE, and purge is waited for
// (mariaPurgeWait), not with TRUNCATE: TRUNCATE gives a table a new tablespace
// file of a few pages, so every run measured InnoDB growing the file
// again, and while it grows, a page split holds the index's latch across
// the file's extension (fallocate) and 16 writers on 2 CPUs queue on that
// latch: at concurrency 16 the batched cells spent 120 to 150 context
// switches and 400 to 900 µs of MariaDB CPU per event there, against
// about 1 and 80 µs with the files kept (issue 23; MEASURED.md of the
// branch mariac16). A deployed store's tables hold their retention window
// and do not start from a new file. The orders table is truncated: it is
// filled here, not during the run.
func (m *mariadb) reset(ctx context.Context, orderIDs []string) error {
	for _, stmt := range []string{`DELETE FROM "ackgap_inbox"`, `DELETE FROM "ackgap_outbox"`, `TRUNCATE TABLE orders`} {
		if _, err := m.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("mariadb: reset: %w", err)
		}
	}
	if err := mariaPurgeWait(ctx, m.db); err != nil {
		return err
	}
	const per = 1000
	for lo := 0; lo < len(orderIDs); lo += per {
		hi := min(lo+per, len(orderIDs))
		var q strings.Builder
		q.WriteString(`INSERT INTO orders (id, status, amount_cents, email) VALUES `)
		args := make([]any, 0, 4*(hi-lo))
		for i := lo; i < hi; i++ {
			if i > lo {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, orderIDs[i], statusPending, int64(100+i%9900), orderIDs[i]+"@example.com")
		}
		if _, err := m.db.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("mariadb: seed orders: %w", err)
		}
	}
	if _, err := m.db.ExecContext(ctx, `ANALYZE TABLE orders`); err != nil {
		return fmt.Errorf("mariadb: analyze: %w", err)
	}
	return nil
}

// mariaPurgeWait waits, at most purgeWaitMax, until InnoDB's purge has
// removed the rows a reset deleted (history list length 0), so that the
// next run does not share the CPUs with it. The length is the server's:
// other clients' transactions can hold it up, hence the bound.
func mariaPurgeWait(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(purgeWaitMax)
	for {
		var name string
		var n int64
		if err := db.QueryRowContext(ctx, `SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'`).Scan(&name, &n); err != nil {
			return fmt.Errorf("mariadb: purge wait: %w", err)
		}
		if n == 0 || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// purgeWaitMax bounds mariaPurgeWait.
const purgeWaitMax = 5 * time.Second

func (m *mariadb) counts(ctx context.Context) (counts, error) {
	var c counts
	err := m.db.QueryRowContext(ctx, `SELECT
    (SELECT COALESCE(SUM(version), 0) FROM orders),
    (SELECT COUNT(*) FROM "ackgap_outbox" WHERE kind = ?),
    (SELECT COUNT(*) FROM "ackgap_outbox" WHERE kind = ?),
    (SELECT COUNT(*) FROM "ackgap_inbox")`, kindCharge, kindReceipt).
		Scan(&c.transitions, &c.charges, &c.receipts, &c.inbox)
	if err != nil {
		return c, fmt.Errorf("mariadb: counts: %w", err)
	}
	return c, nil
}

func (m *mariadb) safeRouter(cfg *router.Config, sub message.Subscriber, topics []string, queue, inboxOnly bool) (runner, error) {
	h := chargeOrder[*sql.Tx](queue)
	if inboxOnly {
		h = noop[*sql.Tx]
	}
	return newSafeRouter(m.store, cfg, sub, topics, h)
}

// unsafe is the guarded UPDATE in autocommit, as a MySQL user writes it
// without an inbox.
func (m *mariadb) unsafe(msg *message.Message) error {
	ev, err := decode(msg)
	if err != nil {
		return err
	}
	_, err = m.db.ExecContext(msg.Context(), myTransition, statusCharging, ev.OrderID, statusPending)
	return err
}

// myReadCommitted is the hand-written consumer's transaction: READ
// COMMITTED, as mysqlstore's (under REPEATABLE READ concurrent inbox
// inserts deadlock through gap locks).
var myReadCommitted = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// handWritten is the safe pattern as a careful MySQL user writes it, one
// statement per round trip: BEGIN at READ COMMITTED, INSERT of the inbox
// row (1062: a duplicate, roll back and ack), the guarded UPDATE (no row:
// read the state to tell applied from refused), one INSERT per outbox row
// (1062: read the stored hash, the same payload is a duplicate, another an
// idempotency conflict), COMMIT.
func (m *mariadb) handWritten(msg *message.Message) error {
	ctx := msg.Context()
	ev, err := decode(msg)
	if err != nil {
		return err
	}
	id := msg.Metadata.Get(eventIDKey)
	if id == "" {
		return ackgap.Permanent(ackgap.ReasonMissingEventID, ackgap.ErrMissingEventID)
	}
	tx, err := m.db.BeginTx(ctx, myReadCommitted)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	now := time.Now().UnixMicro()
	if _, err := tx.ExecContext(ctx, myInboxInsert, consumer, id, payloadHash(msg.Payload), now, nil); err != nil {
		if isDupEntry(err) {
			return nil // a duplicate: roll back, ack
		}
		return err
	}
	res, err := tx.ExecContext(ctx, myTransition, statusCharging, ev.OrderID, statusPending)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		var state string
		if err := tx.QueryRowContext(ctx, myState, ev.OrderID).Scan(&state); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if state != statusCharging {
			return ackgap.Permanent(ackgap.ReasonTransitionRefused, ackgap.ErrTransitionRefused)
		}
		return tx.Commit() // already applied by another event: keep the inbox row, no effects
	}
	chargeKey, charge, receiptKey, receipt, err := effects(&ev)
	if err != nil {
		return err
	}
	for _, row := range []struct {
		kind, key string
		payload   []byte
	}{{kindCharge, chargeKey, charge}, {kindReceipt, receiptKey, receipt}} {
		hash := payloadHash(row.payload)
		_, err := tx.ExecContext(ctx, myOutboxInsert, row.kind, row.key, row.payload, hash, outboxHeadersJSON, consumer, id, "", now, now)
		if isDupEntry(err) {
			var rowID int64
			var stored []byte
			if err := tx.QueryRowContext(ctx, myOutboxExisting, row.key).Scan(&rowID, &stored); err != nil {
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

// isDupEntry reports whether err is MySQL's ER_DUP_ENTRY (1062).
func isDupEntry(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1062
}

// ceiling sends what the safe workload writes for one event in one round
// trip, with no framework: the transaction's statements joined in one
// multi-statement (parameters interpolated by the driver): READ COMMITTED,
// START TRANSACTION, the inbox insert (INSERT IGNORE: a duplicate goes on
// and writes nothing), the guarded UPDATE, both outbox rows in one INSERT
// (myOutboxCeiling), COMMIT. It cannot branch on a result, so a duplicate
// runs every statement: the guard and the outbox's ON DUPLICATE KEY make
// them write nothing. A failed statement stops the rest, so the
// connection is rolled back before it goes back to the pool.
func (m *mariadb) ceiling(ctx context.Context, ev *event) error {
	var body orderPlaced
	if err := json.Unmarshal(ev.payload, &body); err != nil {
		return err
	}
	chargeKey, charge, receiptKey, receipt, err := effects(&body)
	if err != nil {
		return err
	}
	now := time.Now().UnixMicro()
	conn, err := m.multi.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, myCeiling,
		consumer, ev.eventID, payloadHash(ev.payload), now,
		statusCharging, ev.orderID, statusPending,
		kindCharge, chargeKey, charge, payloadHash(charge), outboxHeadersJSON, consumer, ev.eventID, "", now, now,
		kindReceipt, receiptKey, receipt, payloadHash(receipt), outboxHeadersJSON, consumer, ev.eventID, "", now, now)
	if err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
	return err
}

// myCeiling is the ceiling's multi-statement.
const myCeiling = `SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION;
INSERT IGNORE INTO "ackgap_inbox" (consumer, event_id, payload_hash, received_at) VALUES (?, ?, ?, ?);
` + myTransition + `;
` + myOutboxCeiling + `;
COMMIT`

func (m *mariadb) facts(ctx context.Context) ([]fact, error) {
	var version string
	if err := m.db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		return nil, err
	}
	out := []fact{{"MariaDB", version}}
	for _, v := range []string{"innodb_flush_log_at_trx_commit", "sync_binlog", "log_bin", "innodb_doublewrite", "innodb_flush_method",
		"innodb_buffer_pool_size", "thread_handling", "max_connections"} {
		var name, value string
		if err := m.db.QueryRowContext(ctx, `SHOW GLOBAL VARIABLES LIKE '`+v+`'`).Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		out = append(out, fact{"MariaDB " + v, value})
	}
	out = append(out, fact{"MariaDB pool", fmt.Sprintf("go-sql-driver/mysql %s through mysqlstore.Open, %d connections, every transaction READ COMMITTED; the ceiling: a pool of its own with multiStatements and interpolateParams",
		moduleVersion("github.com/go-sql-driver/mysql"), m.db.Stats().MaxOpenConnections)})
	return out, nil
}
