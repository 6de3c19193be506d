package pgxstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/storekit"
)

// The statements of the batched mode, built from the store's table names.
// ORDER BY in the inserts takes the keys' locks in one order in every
// batch, so two batches sharing keys wait for one another instead of
// deadlocking.
func (s *Store) inboxInsertMany() string {
	return `INSERT INTO ` + s.names.Inbox + ` (consumer, event_id, payload_hash, received_at, trace_parent)
SELECT $1, u.e, u.h, COALESCE($4::timestamptz, now()), u.t FROM unnest($2::text[], $3::bytea[], $5::text[]) AS u(e, h, t) ORDER BY u.e
ON CONFLICT DO NOTHING RETURNING event_id`
}

func (s *Store) outboxInsertMany() string {
	return `INSERT INTO ` + s.names.Outbox + ` (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
SELECT u.kind, u.key, u.payload, u.hash, u.headers::jsonb, u.consumer, u.event_id, COALESCE(u.created, now()), COALESCE(u.available, u.created, now())
FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[])
    AS u(kind, key, payload, hash, headers, consumer, event_id, created, available)
ORDER BY u.key
ON CONFLICT (idempotency_key) DO NOTHING RETURNING idempotency_key`
}

// BeginInboxMany implements [stores.Store.BeginInboxMany] in one
// round trip: a pgx batch of BEGIN, one INSERT ... SELECT FROM unnest(...)
// ON CONFLICT DO NOTHING RETURNING event_id, and the savepoint. When some
// rows existed, a second round trip reads their payload hashes; it is a
// statement of its own, so under READ COMMITTED it sees rows a concurrent
// batch committed while the insert waited on them. The rows are inserted
// in event id order, so batches sharing ids do not deadlock on them.
func (s *Store) BeginInboxMany(ctx context.Context, p *stores.BeginInboxManyParams) (*stores.BeginInboxManyResult[pgx.Tx], error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ids := make([]string, len(p.Rows))
	hashes := make([][]byte, len(p.Rows))
	traces := make([]*string, len(p.Rows))
	for i, r := range p.Rows {
		ids[i], hashes[i], traces[i] = r.EventID, r.PayloadHash, nullString(r.TraceParent)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, acquireError(err)
	}
	var b pgx.Batch
	b.BeginTx(pgx.TxOptions{})
	inserted := make(map[string]struct{}, len(ids))
	if len(ids) > 0 {
		b.Queue(s.inboxInsertMany(), p.Consumer, ids, hashes, nullTime(p.Now), traces).Query(func(rows pgx.Rows) error {
			var id string
			_, err := pgx.ForEachRow(rows, []any{&id}, func() error {
				inserted[id] = struct{}{}
				return nil
			})
			return err
		})
	}
	if p.Savepoint != "" {
		b.Queue("SAVEPOINT " + storekit.QuoteIdentifier(p.Savepoint))
	}
	br := conn.SendBatch(ctx, &b)
	// An inbox transaction, begun already: it queues outbox rows
	// and wakes the relays after a commit that wrote some.
	tx := &inboxTx{tx: br.Tx(), conn: conn, pgConn: conn.Conn(), store: s}
	if len(p.Progress) > 0 {
		tx.consumer, tx.progress = p.Consumer, stores.MergeProgress(p.Progress)
	}
	if err := br.Close(); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx)) // ErrTxClosed when BEGIN failed
		return nil, interpretError("begin and insert inbox rows", err)
	}
	res := &stores.BeginInboxManyResult[pgx.Tx]{Tx: tx, Rows: make([]stores.InboxManyOutcome, len(ids))}
	var dups []string
	for _, id := range ids {
		if _, ok := inserted[id]; !ok {
			dups = append(dups, id)
		}
	}
	if len(dups) == 0 {
		return res, nil
	}
	stored := make(map[string][]byte, len(dups))
	storedTrace := make(map[string]string, len(dups))
	rows, _ := tx.Query(ctx, `SELECT event_id, payload_hash, coalesce(trace_parent, '') FROM `+s.names.Inbox+` WHERE consumer = $1 AND event_id = ANY($2::text[])`, p.Consumer, dups)
	var id, trace string
	var hash []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &hash, &trace}, func() error {
		stored[id], storedTrace[id] = hash, trace
		return nil
	})
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, interpretError("read duplicate inbox rows", err)
	}
	for i, r := range p.Rows {
		if _, ok := inserted[r.EventID]; ok {
			continue
		}
		h := stored[r.EventID]
		res.Rows[i] = stores.InboxManyOutcome{Duplicate: true, PayloadMismatch: h != nil && r.PayloadHash != nil && !bytes.Equal(h, r.PayloadHash), StoredHash: h, TraceParent: storedTrace[r.EventID]}
	}
	return res, nil
}

// SavepointTx implements [stores.Store.SavepointTx].
// On a transaction of BeginInboxMany (or BeginInboxDeferred) whose BEGIN was sent,
// the SAVEPOINT is held back like a queued outbox row: it goes, in order,
// with the store's next statement (a message's queued transition or
// outbox rows, and the RELEASE), so a message whose handler only queues
// (ackgap.ApplyTransition unread, ackgap.AddOutbox) costs one round trip,
// not three (SAVEPOINT, its statements, RELEASE); a statement of the
// handler's own sends the SAVEPOINT first (see holdsSavepoint), and so
// does a queued transition whose text never ran on this store (see
// savepointCut): either could fail to prepare (a missing table), which
// would fail the round trip before the SAVEPOINT ran.
func (s *Store) SavepointTx(ctx context.Context, tx pgx.Tx, name string) error {
	if err := storekit.ValidIdentifier("savepoint name", name); err != nil {
		return fmt.Errorf("pgxstore: savepoint: %w", err)
	}
	if t, ok := tx.(*inboxTx); ok && t.store == s && !t.ended && t.pending == nil {
		t.queued = append(t.queued, queuedRow{savepoint: storekit.QuoteIdentifier(name)})
		return nil
	}
	return s.savepointExec(ctx, tx, "savepoint", "SAVEPOINT ", name)
}

// RollbackToSavepointTx implements [stores.Store.RollbackToSavepointTx].
// Statements the transaction still holds back (QueueOutboxTx,
// QueueTransitionTx) were queued after the savepoint, which sent what was
// queued before it: they are discarded, not sent, so one of them that
// would fail (a refused transition) cannot fail the rollback too. When the
// SAVEPOINT itself is still held back, nothing was sent since: the
// statements from it on are discarded and nothing is sent. A RELEASE held
// back (ReleaseSavepointTx) was asked before the rollback: it is sent
// first, with what was queued ahead of it, and the statements after it are
// discarded.
func (s *Store) RollbackToSavepointTx(ctx context.Context, tx pgx.Tx, name string) error {
	if t, ok := tx.(*inboxTx); ok && t.store == s {
		quoted := storekit.QuoteIdentifier(name)
		for i := len(t.queued) - 1; i >= 0; i-- {
			if t.queued[i].savepoint == quoted {
				t.queued = t.queued[:i]
				return nil
			}
			if t.queued[i].release != "" {
				t.queued = t.queued[:i+1]
				if err := t.flush(ctx); err != nil {
					return err
				}
				break
			}
		}
		t.queued = nil
	}
	return s.savepointExec(ctx, tx, "rollback to savepoint", "ROLLBACK TO SAVEPOINT ", name)
}

// ReleaseSavepointTx implements [stores.Store.ReleaseSavepointTx].
// Statements the transaction holds back (a held SAVEPOINT, outbox rows,
// transitions) go in the RELEASE's round trip, ahead of it; the first
// error among them (a refused transition, an idempotency conflict) is
// returned as it is, and the RELEASE does not run. When nothing is held
// back and the connection's last answer said the transaction is not
// aborted (a statement since the savepoint failed: then the RELEASE is
// sent at once and fails, as the contract says), nothing can fail it but
// a savepoint that does not exist: it is held back itself and goes with
// the store's next statement (the COMMIT, the next round's SAVEPOINT and
// statements), or ahead of the caller's next statement, which report its
// error; a batch whose handler ran its statements itself then costs one
// round trip less.
func (s *Store) ReleaseSavepointTx(ctx context.Context, tx pgx.Tx, name string) error {
	if err := storekit.ValidIdentifier("savepoint name", name); err != nil {
		return fmt.Errorf("pgxstore: release savepoint: %w", err)
	}
	if t, ok := tx.(*inboxTx); ok && t.store == s && !t.ended && t.pending == nil {
		if len(t.queued) == 0 && t.pgConn.PgConn().TxStatus() == 'T' {
			t.queued = append(t.queued, queuedRow{release: storekit.QuoteIdentifier(name)})
			return nil
		}
		_, err := t.send(ctx, false, "RELEASE SAVEPOINT "+storekit.QuoteIdentifier(name))
		return err
	}
	return s.savepointExec(ctx, tx, "release savepoint", "RELEASE SAVEPOINT ", name)
}

func (s *Store) savepointExec(ctx context.Context, tx pgx.Tx, op, verb, name string) error {
	if err := storekit.ValidIdentifier("savepoint name", name); err != nil {
		return fmt.Errorf("pgxstore: %s: %w", op, err)
	}
	_, err := tx.Exec(ctx, verb+storekit.QuoteIdentifier(name))
	return interpretError(op, err)
}

// DeleteInboxTx implements [stores.Store.DeleteInboxTx]: one DELETE
// ... WHERE event_id = ANY($2).
func (s *Store) DeleteInboxTx(ctx context.Context, tx pgx.Tx, p *stores.DeleteInboxParams) (*stores.DeleteInboxResult, error) {
	if len(p.EventIDs) == 0 {
		return &stores.DeleteInboxResult{}, nil
	}
	tag, err := tx.Exec(ctx, `DELETE FROM `+s.names.Inbox+` WHERE consumer = $1 AND event_id = ANY($2::text[])`, p.Consumer, p.EventIDs)
	if err != nil {
		return nil, interpretError("delete inbox rows", err)
	}
	return &stores.DeleteInboxResult{Deleted: tag.RowsAffected()}, nil
}

// InsertOutboxManyTx implements [stores.Store.InsertOutboxManyTx]:
// one INSERT ... SELECT FROM unnest(...) ON CONFLICT DO NOTHING RETURNING
// the keys it inserted, in key order; when some were not inserted, a
// SELECT of their payload hashes tells duplicates from conflicts.
func (s *Store) InsertOutboxManyTx(ctx context.Context, tx pgx.Tx, p *stores.OutboxInsertManyParams) (*stores.OutboxInsertManyResult, error) {
	plan, err := storekit.PlanOutboxMany(p)
	if err != nil {
		return nil, err
	}
	n := len(plan.Rows)
	if n == 0 {
		return &stores.OutboxInsertManyResult{Duplicate: plan.Duplicate}, nil
	}
	var (
		kinds, keys, headers, consumers, eventIDs = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		payloads, hashes                          = make([][]byte, n), make([][]byte, n)
		created, available                        = make([]*time.Time, n), make([]*time.Time, n)
	)
	for j, i := range plan.Rows {
		r := &p.Rows[i]
		h, err := encodeHeaders(r.Headers)
		if err != nil {
			return nil, err
		}
		kinds[j], keys[j], headers[j], consumers[j], eventIDs[j] = r.Kind, r.IdempotencyKey, string(h), r.Consumer, r.EventID
		payloads[j], hashes[j] = r.Payload, plan.Hashes[j]
		if payloads[j] == nil {
			payloads[j] = []byte{}
		}
		created[j], available[j] = nullTime(r.Now), nullTime(r.AvailableAt)
	}
	rows, _ := tx.Query(ctx, s.outboxInsertMany(), kinds, keys, payloads, hashes, headers, consumers, eventIDs, created, available)
	inserted := make(map[string]struct{}, n)
	var key string
	if _, err := pgx.ForEachRow(rows, []any{&key}, func() error {
		inserted[key] = struct{}{}
		return nil
	}); err != nil {
		return nil, interpretError("insert outbox rows", err)
	}
	if t, ok := tx.(*inboxTx); ok && t.store == s && len(inserted) > 0 && dueSoon(time.Now(), p.Rows...) {
		t.notify = true
	}
	if len(inserted) == n {
		return &stores.OutboxInsertManyResult{Duplicate: plan.Duplicate}, nil
	}
	var existing []string
	for _, k := range keys {
		if _, ok := inserted[k]; !ok {
			existing = append(existing, k)
		}
	}
	stored := make(map[string][]byte, len(existing))
	rows, _ = tx.Query(ctx, `SELECT idempotency_key, payload_hash FROM `+s.names.Outbox+` WHERE idempotency_key = ANY($1::text[])`, existing)
	var hash []byte
	if _, err := pgx.ForEachRow(rows, []any{&key, &hash}, func() error {
		stored[key] = hash
		return nil
	}); err != nil {
		return nil, interpretError("read outbox rows", err)
	}
	return plan.Settle(p, inserted, stored)
}
