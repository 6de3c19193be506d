package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/go-sql-driver/mysql"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
)

// The Kafka ordering modes comparison on MariaDB (-kafka-modes-store
// mariadb): the same consumers, events and checks as on PostgreSQL, with
// the SQL a MySQL user writes: "?" placeholders, 1062 for a duplicate
// inbox row, the set-based step as a multi-table UPDATE joined to a
// derived table of the batch (no unnest, no RETURNING), and a hand-written
// relay that claims with SELECT ... FOR UPDATE SKIP LOCKED then UPDATE (no
// UPDATE ... RETURNING).

// Stores -kafka-modes-store accepts.
const (
	kmStorePostgres = "postgres"
	kmStoreMariaDB  = "mariadb"
)

// kmStores are the values of -kafka-modes-store.
var kmStores = []string{kmStorePostgres, kmStoreMariaDB}

// kmMaria is the MariaDB half of kmEnv: a database of its own, the
// consumer's store and pool, the relays' store and pool.
type kmMaria struct {
	admin      *mysql.Config
	dbName     string
	store      *mysqlstore.Store
	relayStore *mysqlstore.Store
}

// kmMySQLSchema is the comparison's own tables on MariaDB.
var kmMySQLSchema = []string{
	`CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY, seq INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)`,
	`CREATE TABLE misses (id BIGINT AUTO_INCREMENT PRIMARY KEY, order_id VARCHAR(64) NOT NULL, seq INTEGER NOT NULL)`,
	`CREATE TABLE hand_inbox (consumer VARCHAR(255) NOT NULL, event_id VARCHAR(255) NOT NULL, PRIMARY KEY (consumer, event_id))`,
	`CREATE TABLE hand_outbox (id BIGINT AUTO_INCREMENT PRIMARY KEY, kind VARCHAR(32) NOT NULL, idempotency_key VARCHAR(255) NOT NULL UNIQUE,
  payload LONGBLOB NOT NULL, state VARCHAR(16) NOT NULL DEFAULT 'pending', INDEX hand_outbox_pending (state, id))`,
}

// openKMMaria creates database ackgap_kmodes_<random> on the server of dsn
// with ackgap's tables and the comparison's, a consumer pool of 24
// connections and a relay pool of 8 (as on PostgreSQL).
func openKMMaria(ctx context.Context, dsn string) (*kmMaria, error) {
	cfg, err := mysqlstore.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	m := &kmMaria{admin: cfg, dbName: "ackgap_kmodes_" + hex.EncodeToString(b)}
	if err := m.adminExec(ctx, "CREATE DATABASE "+m.dbName); err != nil {
		return nil, err
	}
	own := cfg.Clone()
	own.DBName = m.dbName
	if m.store, err = mysqlstore.Open(ctx, own.FormatDSN(), &mysqlstore.Config{MaxOpenConns: 24}); err == nil {
		m.store.DB().SetConnMaxLifetime(0)
		m.relayStore, err = mysqlstore.Open(ctx, own.FormatDSN(), &mysqlstore.Config{MaxOpenConns: 8})
	}
	if err == nil {
		m.relayStore.DB().SetConnMaxLifetime(0)
		_, err = m.store.Migrate(ctx, &stores.MigrateParams{})
	}
	for _, q := range kmMySQLSchema {
		if err != nil {
			break
		}
		_, err = m.store.DB().ExecContext(ctx, q)
	}
	if err != nil {
		m.close()
		return nil, fmt.Errorf("mariadb: setup: %w", err)
	}
	return m, nil
}

func (m *kmMaria) adminExec(ctx context.Context, stmt string) error {
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

func (m *kmMaria) close() {
	if m.store != nil {
		_ = m.store.Close()
	}
	if m.relayStore != nil {
		_ = m.relayStore.Close()
	}
	_ = m.adminExec(context.Background(), "DROP DATABASE IF EXISTS "+m.dbName)
}

// reset empties the tables and adds the kmKeys orders at seq 0. The
// tables the runs write are emptied with DELETE and purge is waited for,
// not with TRUNCATE, which would give them new tablespace files for every
// run to grow again (see mariadb.reset).
func (m *kmMaria) reset(ctx context.Context) error {
	db := m.store.DB()
	for _, stmt := range []string{"TRUNCATE TABLE orders", "DELETE FROM misses", "DELETE FROM hand_inbox", "DELETE FROM hand_outbox",
		`DELETE FROM "ackgap_inbox"`, `DELETE FROM "ackgap_outbox"`} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if err := mariaPurgeWait(ctx, db); err != nil {
		return err
	}
	var q strings.Builder
	q.WriteString("INSERT INTO orders (id) VALUES ")
	args := make([]any, kmKeys)
	for i := range kmKeys {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?)")
		args[i] = fmt.Sprintf("k-%d", i)
	}
	_, err := db.ExecContext(ctx, q.String(), args...)
	return err
}

// tids opens every connection of db and returns the OS threads that serve
// them (one-thread-per-connection), for their CPU time.
func mariaTIDs(ctx context.Context, db *sql.DB) []uint32 {
	n := db.Stats().MaxOpenConnections
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	var tids []uint32
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			break
		}
		conns = append(conns, c)
		var tid sql.NullInt64
		if c.QueryRowContext(ctx, `SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()`).Scan(&tid) == nil && tid.Valid {
			tids = append(tids, uint32(tid.Int64))
		}
	}
	return tids
}

// check reads the guarded misses and every order's seq.
func (m *kmMaria) check(ctx context.Context) (misses int, seqs map[string]int, err error) {
	db := m.store.DB()
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM misses`).Scan(&misses); err != nil {
		return 0, nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT id, seq FROM orders`)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	seqs = map[string]int{}
	for rows.Next() {
		var id string
		var seq int
		if err := rows.Scan(&id, &seq); err != nil {
			return 0, nil, err
		}
		seqs[id] = seq
	}
	return misses, seqs, rows.Err()
}

// myGuardedStep is guardedStep with "?" placeholders: seq, id, seq.
const myGuardedStep = `UPDATE orders SET seq = ?, version = version + 1 WHERE id = ? AND seq = ? - 1`

// myStep is step on MariaDB.
func myStep(ctx context.Context, ex interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, order string, seq int) error {
	res, err := ex.ExecContext(ctx, myGuardedStep, seq, order, seq)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		//ackgapvet:ignore append the unsafe baseline has no dedupe on purpose; a miss row is what it is measured by
		_, err = ex.ExecContext(ctx, `INSERT INTO misses (order_id, seq) VALUES (?, ?)`, order, seq)
		return err
	}
	return nil
}

// batchStep is kmEnv.batchStep on MariaDB, where UPDATE has no RETURNING
// and there is no unnest: the batch is a derived table of SELECT ?, ?
// rows; one SELECT ... FOR UPDATE reads (and locks) the orders the step
// will move, one multi-table UPDATE moves them, and the batch's other
// events (out of order or applied twice) go to misses in one INSERT; the
// outbox rows in one statement.
func (m *kmMaria) batchStep(ctx context.Context, tx *sql.Tx, msgs []*message.Message) error {
	var batch strings.Builder
	args := make([]any, 0, 2*len(msgs))
	seqOf := make(map[string]int, len(msgs))
	rows := make([]ackgap.OutboxEntry, 0, 2*len(msgs))
	for i, msg := range msgs {
		order, seq, err := parseEvent(msg)
		if err != nil {
			return err
		}
		if _, ok := seqOf[order]; ok {
			return fmt.Errorf("order %s twice in one batch", order)
		}
		seqOf[order] = seq
		if i == 0 {
			batch.WriteString("SELECT ? AS id, ? AS seq")
		} else {
			batch.WriteString(" UNION ALL SELECT ?, ?")
		}
		args = append(args, order, seq)
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		for _, k := range []string{"charge", "receipt"} {
			rows = append(rows, ackgap.OutboxEntry{Kind: k, IdempotencyKey: k + ":" + id, Payload: msg.Payload,
				Consumer: kmConsumer, EventID: id})
		}
	}
	rs, err := tx.QueryContext(ctx, `SELECT o.id FROM orders o JOIN (`+batch.String()+`) u ON o.id = u.id
WHERE o.seq = u.seq - 1 FOR UPDATE`, args...)
	if err != nil {
		return err
	}
	moving := make(map[string]bool, len(msgs))
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			_ = rs.Close()
			return err
		}
		moving[id] = true
	}
	if err := errors.Join(rs.Err(), rs.Close()); err != nil {
		return err
	}
	if len(moving) > 0 {
		res, err := tx.ExecContext(ctx, `UPDATE orders o JOIN (`+batch.String()+`) u ON o.id = u.id
SET o.seq = u.seq, o.version = o.version + 1 WHERE o.seq = u.seq - 1`, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != int64(len(moving)) {
			return fmt.Errorf("mariadb: moved %d orders, locked %d", n, len(moving))
		}
	}
	if len(moving) < len(msgs) {
		var q strings.Builder
		var missArgs []any
		q.WriteString("INSERT INTO misses (order_id, seq) VALUES ")
		for order, seq := range seqOf {
			if !moving[order] {
				if len(missArgs) > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?)")
				missArgs = append(missArgs, order, seq)
			}
		}
		if _, err := tx.ExecContext(ctx, q.String(), missArgs...); err != nil {
			return err
		}
	}
	return ackgap.AddOutboxMany(ctx, rows)
}

// handSafe is kmEnv.handSafe as a MySQL user writes it: BEGIN at READ
// COMMITTED, INSERT of the inbox row (1062: a duplicate, commit nothing),
// the guarded step, both outbox rows in one INSERT, COMMIT.
func (m *kmMaria) handSafe(msg *message.Message) error {
	ctx := msg.Context()
	order, seq, err := parseEvent(msg)
	if err != nil {
		return err
	}
	id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
	tx, err := m.store.DB().BeginTx(ctx, myReadCommitted)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `INSERT INTO hand_inbox (consumer, event_id) VALUES (?, ?)`, kmConsumer, id); err != nil {
		if isDupEntry(err) {
			return nil // a duplicate
		}
		return err
	}
	if err := myStep(ctx, tx, order, seq); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO hand_outbox (kind, idempotency_key, payload) VALUES ('charge', ?, ?), ('receipt', ?, ?)`,
		"charge:"+id, msg.Payload, "receipt:"+id, msg.Payload); err != nil {
		return err
	}
	return tx.Commit()
}

// handRelay is kmEnv.handRelay on MariaDB: claim up to kmHandClaim pending
// rows in one transaction (SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE
// by id: there is no UPDATE ... RETURNING), call them concurrently, mark
// the done ones in one statement; poll every kmPollEvery when a claim came
// back short.
func (m *kmMaria) handRelay(ctx context.Context, prov *kmProvider) {
	db := m.relayStore.DB()
	type row struct {
		id      int64
		key     string
		payload []byte
	}
	claim := func() ([]row, error) {
		tx, err := db.BeginTx(ctx, myReadCommitted)
		if err != nil {
			return nil, err
		}
		defer func() { _ = tx.Rollback() }()
		rs, err := tx.QueryContext(ctx, `SELECT id, idempotency_key, payload FROM hand_outbox WHERE state = 'pending'
ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`, kmHandClaim)
		if err != nil {
			return nil, err
		}
		var claimed []row
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.id, &r.key, &r.payload); err != nil {
				_ = rs.Close()
				return nil, err
			}
			claimed = append(claimed, r)
		}
		if err := errors.Join(rs.Err(), rs.Close()); err != nil || len(claimed) == 0 {
			return nil, err
		}
		ids := make([]any, len(claimed))
		for i, r := range claimed {
			ids[i] = r.id
		}
		if _, err := tx.ExecContext(ctx, `UPDATE hand_outbox SET state = 'claimed' WHERE id IN (`+placeholderList(len(ids))+`)`, ids...); err != nil {
			return nil, err
		}
		return claimed, tx.Commit()
	}
	mark := func(state string, ids []any) {
		if len(ids) > 0 {
			_, _ = db.ExecContext(context.WithoutCancel(ctx), `UPDATE hand_outbox SET state = '`+state+`' WHERE id IN (`+placeholderList(len(ids))+`)`, ids...)
		}
	}
	for ctx.Err() == nil {
		claimed, _ := claim()
		if len(claimed) > 0 {
			var done, failed []any
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, r := range claimed {
				wg.Go(func() {
					err := prov.call(ctx, r.key, r.payload)
					mu.Lock()
					if err == nil {
						done = append(done, r.id)
					} else {
						failed = append(failed, r.id)
					}
					mu.Unlock()
				})
			}
			wg.Wait()
			mark("done", done)
			mark("pending", failed)
		}
		if len(claimed) < kmHandClaim {
			select {
			case <-time.After(kmPollEvery):
			case <-ctx.Done():
			}
		}
	}
}

// placeholderList returns n "?" joined by commas.
func placeholderList(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// resetDB empties the comparison's tables and adds the kmKeys orders at
// seq 0, on either database.
func (env *kmEnv) resetDB(ctx context.Context) error {
	if env.my != nil {
		return env.my.reset(ctx)
	}
	if _, err := env.pool.Exec(ctx, `TRUNCATE orders, misses, hand_inbox, hand_outbox, ackgap_inbox, ackgap_outbox`); err != nil {
		return err
	}
	_, err := env.pool.Exec(ctx, `INSERT INTO orders (id) SELECT 'k-' || i FROM generate_series(0, $1::int - 1) AS i`, kmKeys)
	return err
}

// dbPIDs opens every connection of the consumer's and the relay's pools
// and returns the server processes (PostgreSQL backends) or threads
// (MariaDB) that serve them, for their CPU time.
func (env *kmEnv) dbPIDs(ctx context.Context) (consumer, relay []uint32) {
	if env.my != nil {
		return mariaTIDs(ctx, env.my.store.DB()), mariaTIDs(ctx, env.my.relayStore.DB())
	}
	return kmPoolPIDs(ctx, env.pool), kmPoolPIDs(ctx, env.relayPool)
}

// readOutcome returns the guarded misses and every order's seq.
func (env *kmEnv) readOutcome(ctx context.Context) (misses int, seqs map[string]int, err error) {
	if env.my != nil {
		return env.my.check(ctx)
	}
	if err := env.pool.QueryRow(ctx, `SELECT count(*) FROM misses`).Scan(&misses); err != nil {
		return 0, nil, err
	}
	rows, err := env.pool.Query(ctx, `SELECT id, seq FROM orders`)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	seqs = map[string]int{}
	for rows.Next() {
		var id string
		var seq int
		if err := rows.Scan(&id, &seq); err != nil {
			return 0, nil, err
		}
		seqs[id] = seq
	}
	return misses, seqs, rows.Err()
}

// dbName is the database of the comparison, as its report names it.
func (o *kmOptions) dbName() string {
	if o.store == kmStoreMariaDB {
		return "MariaDB"
	}
	return "PostgreSQL"
}
