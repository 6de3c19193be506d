package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/storekit"
)

// The hand-written SQL of the PostgreSQL workloads: the statements
// pgxstore sends for the same work, character for character, so the
// server parses, plans and runs the same thing whoever sends it.
const (
	pgInboxInsert = `INSERT INTO "ackgap_inbox" (consumer, event_id, payload_hash, received_at, trace_parent)
VALUES ($1, $2, $3, COALESCE($4::timestamptz, now()), $5) ON CONFLICT DO NOTHING`
	// pgNotify wakes the relays after a commit that wrote outbox rows, as
	// pgxstore does in the COMMIT's round trip (migration 003).
	pgNotify = `select pg_notify($1, '')`
	// pgTransition is what sqlbuild.Transition renders for the billing
	// handler's TransitionParams.
	pgTransition = `UPDATE "orders" SET "status" = $1, "version" = "version" + 1 WHERE "id" = $2 AND "status" IN ($3)`
	pgState      = `SELECT "status" FROM "orders" WHERE "id" = $1`
	// pgOutboxInsert is pgxstore's single-row outbox insert statement; a row that
	// conflicts is then read back (pgOutboxExisting) to tell a duplicate
	// from another payload.
	pgOutboxInsert = `INSERT INTO "ackgap_outbox" (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now()), COALESCE($9::timestamptz, $8::timestamptz, now()))
ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`
	pgOutboxExisting = `SELECT id, payload_hash FROM "ackgap_outbox" WHERE idempotency_key = $1`
	// pgOutboxQueued is the statement pgxstore sends for rows queued with
	// QueueOutboxTx: the insert and the idempotency check in one, failing
	// (division by zero) when the key exists with another payload, so a
	// pipelined COMMIT after it never runs.
	pgOutboxQueued = `INSERT INTO "ackgap_outbox" AS o (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now()), COALESCE($9::timestamptz, $8::timestamptz, now()))
ON CONFLICT (idempotency_key) DO UPDATE SET kind = o.kind WHERE 1 / (o.payload_hash = excluded.payload_hash)::int = 0`
)

// postgres is the PostgreSQL backend: a schema of its own, dropped by
// close, migrated as shipped.
type postgres struct {
	dsn     string
	channel string // the outbox's NOTIFY channel (pgxstore's ListenOutbox)
	schema  string
	pool    *pgxpool.Pool
	store   *pgxstore.Store
	pids    []uint32 // the pool's backends
}

var _ backend = (*postgres)(nil)

// openPostgres creates a fresh schema in the database at dsn, a pool of
// maxConns connections whose search_path is that schema, ackgap's tables
// (store.Migrate) and the orders table.
func openPostgres(ctx context.Context, dsn string, maxConns int32) (*postgres, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	p := &postgres{dsn: dsn, schema: "ackgap_bench_" + hex.EncodeToString(b)}
	if err := p.admin(ctx, "CREATE SCHEMA "+pgx.Identifier{p.schema}.Sanitize()); err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = p.schema
	cfg.ConnConfig.RuntimeParams["application_name"] = "ackgap-benchmarks"
	cfg.MaxConns, cfg.MinConns = maxConns, maxConns
	cfg.MaxConnLifetime, cfg.MaxConnIdleTime = time.Hour, time.Hour
	if p.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		_ = p.close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if p.store, err = pgxstore.New(p.pool, nil); err == nil {
		_, err = p.store.Migrate(ctx, &stores.MigrateParams{})
	}
	if err == nil {
		_, err = p.pool.Exec(ctx, orders.DDL)
	}
	if err == nil {
		err = p.pool.QueryRow(ctx, `SELECT 'ackgap_outbox_' || md5($1 || '.ackgap_outbox')`, p.schema).Scan(&p.channel)
	}
	if err == nil {
		err = p.connectAll(ctx)
	}
	if err != nil {
		_ = p.close()
		return nil, fmt.Errorf("postgres: setup: %w", err)
	}
	return p, nil
}

// connectAll opens every connection of the pool now, so that no run pays
// for connecting.
func (p *postgres) connectAll(ctx context.Context) error {
	conns := make([]*pgxpool.Conn, 0, p.pool.Config().MaxConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range p.pool.Config().MaxConns {
		c, err := p.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		p.pids = append(p.pids, c.Conn().PgConn().PID())
	}
	return nil
}

// serverCPU sums the CPU time of the pool's backends. The pool keeps its
// connections (MinConns = MaxConns), so these are the backends that serve
// every run.
func (p *postgres) serverCPU() (time.Duration, bool) { return schedCPU(p.pids) }

// admin runs stmt on a connection of its own, outside the pool.
func (p *postgres) admin(ctx context.Context, stmt string) error {
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w (is PostgreSQL running? see -dsn)", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("postgres: %s: %w", stmt, err)
	}
	return nil
}

func (p *postgres) name() string { return "postgres" }

func (p *postgres) close() error {
	if p.pool != nil {
		p.pool.Close()
	}
	return p.admin(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{p.schema}.Sanitize()+" CASCADE")
}

// reset truncates the tables, checkpoints (so that no checkpoint starts
// in the middle of the next run, and the pages the run writes need no
// full-page images), and copies in the orders.
func (p *postgres) reset(ctx context.Context, orderIDs []string) error {
	if _, err := p.pool.Exec(ctx, `TRUNCATE "ackgap_inbox", "ackgap_outbox", orders RESTART IDENTITY`); err != nil {
		return fmt.Errorf("postgres: reset: %w", err)
	}
	if _, err := p.pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return fmt.Errorf("postgres: checkpoint: %w", err)
	}
	_, err := p.pool.CopyFrom(ctx, pgx.Identifier{"orders"}, []string{"id", "status", "amount_cents", "email"},
		pgx.CopyFromSlice(len(orderIDs), func(i int) ([]any, error) {
			return []any{orderIDs[i], statusPending, int64(100 + i%9900), orderIDs[i] + "@example.com"}, nil
		}))
	if err != nil {
		return fmt.Errorf("postgres: seed orders: %w", err)
	}
	if _, err := p.pool.Exec(ctx, `ANALYZE orders`); err != nil {
		return fmt.Errorf("postgres: analyze: %w", err)
	}
	return nil
}

func (p *postgres) counts(ctx context.Context) (counts, error) {
	var c counts
	err := p.pool.QueryRow(ctx, `SELECT
    (SELECT COALESCE(sum(version), 0) FROM orders),
    (SELECT count(*) FROM "ackgap_outbox" WHERE kind = $1),
    (SELECT count(*) FROM "ackgap_outbox" WHERE kind = $2),
    (SELECT count(*) FROM "ackgap_inbox")`, kindCharge, kindReceipt).
		Scan(&c.transitions, &c.charges, &c.receipts, &c.inbox)
	if err != nil {
		return c, fmt.Errorf("postgres: counts: %w", err)
	}
	return c, nil
}

func (p *postgres) safeRouter(cfg *router.Config, sub message.Subscriber, topics []string, queue, inboxOnly bool) (runner, error) {
	h := chargeOrder[pgx.Tx](queue)
	if inboxOnly {
		h = noop[pgx.Tx]
	}
	return newSafeRouter(p.store, cfg, sub, topics, h)
}

// newSafeRouter returns router.New on store with h subscribed to every
// topic as consumer "billing".
func newSafeRouter[TTx any](store stores.Store[TTx], cfg *router.Config, sub message.Subscriber, topics []string, h router.HandlerFunc[TTx]) (runner, error) {
	r, err := router.New(store, cfg)
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		if err := r.AddHandler(consumer, t, sub, h); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (p *postgres) unsafe(msg *message.Message) error {
	ev, err := decode(msg)
	if err != nil {
		return err
	}
	_, err = p.pool.Exec(msg.Context(), pgTransition, statusCharging, ev.OrderID, statusPending)
	return err
}

func (p *postgres) handWritten(msg *message.Message) error {
	ctx := msg.Context()
	ev, err := decode(msg)
	if err != nil {
		return err
	}
	id := msg.Metadata.Get(eventIDKey)
	if id == "" {
		return ackgap.Permanent(ackgap.ReasonMissingEventID, ackgap.ErrMissingEventID)
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no round trip after a commit
	tag, err := tx.Exec(ctx, pgInboxInsert, consumer, id, payloadHash(msg.Payload), nil, nil)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return nil // a duplicate: roll back, ack
	}
	tag, err = tx.Exec(ctx, pgTransition, statusCharging, ev.OrderID, statusPending)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		var state string
		if err := tx.QueryRow(ctx, pgState, ev.OrderID).Scan(&state); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if state != statusCharging {
			return ackgap.Permanent(ackgap.ReasonTransitionRefused, ackgap.ErrTransitionRefused)
		}
		return tx.Commit(ctx) // already applied by another event: keep the inbox row, no effects
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
		var rowID int64
		err := tx.QueryRow(ctx, pgOutboxInsert, row.kind, row.key, row.payload, hash, outboxHeadersJSON, consumer, id, nil, nil).Scan(&rowID)
		if errors.Is(err, pgx.ErrNoRows) {
			var stored []byte
			if err := tx.QueryRow(ctx, pgOutboxExisting, row.key).Scan(&rowID, &stored); err != nil {
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
	return tx.Commit(ctx)
}

// ceiling sends what the safe workload sends for one event, in one pipeline
// and one round trip, with no framework: BEGIN, the inbox insert, the
// guarded UPDATE, both outbox rows (with the idempotency check), COMMIT,
// and the pg_notify that wakes relays.
// It cannot branch on a result, so a duplicate runs every statement: the
// inbox insert and the guard make them write nothing.
func (p *postgres) ceiling(ctx context.Context, ev *event) error {
	var body orderPlaced
	if err := json.Unmarshal(ev.payload, &body); err != nil {
		return err
	}
	chargeKey, charge, receiptKey, receipt, err := effects(&body)
	if err != nil {
		return err
	}
	var b pgx.Batch
	b.Queue("begin")
	b.Queue(pgInboxInsert, consumer, ev.eventID, payloadHash(ev.payload), nil, nil)
	b.Queue(pgTransition, statusCharging, ev.orderID, statusPending)
	b.Queue(pgOutboxQueued, kindCharge, chargeKey, charge, payloadHash(charge), outboxHeadersJSON, consumer, ev.eventID, nil, nil)
	b.Queue(pgOutboxQueued, kindReceipt, receiptKey, receipt, payloadHash(receipt), outboxHeadersJSON, consumer, ev.eventID, nil, nil)
	b.Queue("commit")
	b.Queue(pgNotify, p.channel)
	return p.pool.SendBatch(ctx, &b).Close()
}

func (p *postgres) facts(ctx context.Context) ([]fact, error) {
	var out []fact
	var version string
	if err := p.pool.QueryRow(ctx, `SHOW server_version`).Scan(&version); err != nil {
		return nil, err
	}
	out = append(out, fact{"PostgreSQL", version})
	for _, s := range []string{"synchronous_commit", "fsync", "wal_sync_method", "full_page_writes", "commit_delay", "shared_buffers", "max_connections"} {
		var v string
		if err := p.pool.QueryRow(ctx, `SELECT current_setting($1)`, s).Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, fact{"PostgreSQL " + s, v})
	}
	out = append(out, fact{"PostgreSQL pool", fmt.Sprintf("pgx v5 pgxpool, %d connections, default exec mode (statements prepared and cached per connection)", p.pool.Config().MaxConns)})
	return out, nil
}
