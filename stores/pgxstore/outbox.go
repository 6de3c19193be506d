package pgxstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ackgap/ackgap/stores"
)

var (
	_ stores.OutboxStore = (*Store)(nil)
)

// nowSQL is the time a statement runs at: $1 when set, else the
// database's clock, so that relays on hosts with skewed clocks agree.
const nowSQL = `COALESCE($1::timestamptz, now())`

// ClaimOutbox implements [stores.OutboxStore.ClaimOutbox] in one
// statement (its own short transaction): a SELECT ... FOR UPDATE SKIP
// LOCKED of the due rows, oldest due first, and an UPDATE of those rows.
// A row another claimer has locked is skipped, and one it claimed and
// committed meanwhile fails the re-checked WHERE clause (its available_at
// moved to its lease's end), so two claimers never get one row. The
// UPDATE finds the claimed rows by primary key (id = ANY(ARRAY(...))): as
// a join, the generic plan PostgreSQL settles on for the prepared
// statement hashed the whole outbox, done rows included, on every claim
// (8 to 10 ms against 0.3 to 0.4 ms with 20,000 rows).
//
// The claim is planned at every call (pgx.QueryExecModeExec: an unnamed
// statement, so a custom plan for the outbox as it is now). A cached
// generic plan made while the outbox was nearly empty (a relay that
// started on an idle outbox) kept a sort of every due row and a
// sequential scan of the outbox for the UPDATE when a backlog came: in the
// Kafka modes benchmark claims of 50 rows took up to 25 ms.
func (s *Store) ClaimOutbox(ctx context.Context, p *stores.OutboxClaimParams) (*stores.OutboxClaimResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	token, err := newClaimToken()
	if err != nil {
		return nil, err
	}
	var kinds []string
	if len(p.Kinds) > 0 {
		kinds = p.Kinds
	}
	o := s.names.Outbox
	q := `WITH due AS (
    SELECT id FROM ` + o + `
    WHERE state IN ('pending', 'claimed') AND available_at <= ` + nowSQL + `
      AND ($2::text[] IS NULL OR kind = ANY($2::text[]))
    ORDER BY available_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
)
UPDATE ` + o + ` AS o SET state = 'claimed', attempts = o.attempts + 1, claim_token = $4,
    claimed_until = ` + nowSQL + ` + $5::bigint * interval '1 microsecond',
    available_at = ` + nowSQL + ` + $5::bigint * interval '1 microsecond'
WHERE o.id = ANY(ARRAY(SELECT id FROM due))
RETURNING o.id, o.kind, o.idempotency_key, o.payload, o.headers, o.consumer, o.event_id, o.state,
    o.attempts, o.last_error, o.created_at, o.available_at, o.claimed_until`
	rows, err := s.pool.Query(ctx, q, pgx.QueryExecModeExec, nullTime(p.Now), kinds, p.LimitOrDefault(), token, p.Lease.Microseconds())
	if err != nil {
		return nil, interpretError("claim outbox", err)
	}
	defer rows.Close()
	res := &stores.OutboxClaimResult{}
	for rows.Next() {
		var c stores.OutboxRow
		if err := scanRow(rows, &c, &c.Claim.Until); err != nil {
			return nil, interpretError("claim outbox", err)
		}
		c.Claim.ID, c.Claim.Token = c.ID, token
		res.Rows = append(res.Rows, c)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError("claim outbox", err)
	}
	slices.SortFunc(res.Rows, func(a, b stores.OutboxRow) int { return cmp.Compare(a.ID, b.ID) })
	return res, nil
}

// RedriveOutboxIfDead implements [stores.OutboxStore.RedriveOutboxIfDead].
func (s *Store) RedriveOutboxIfDead(ctx context.Context, p *stores.OutboxRedriveParams) (*stores.OutboxRedriveResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = stores.OutboxRedriveLimitDefault
	}
	var ids []int64
	if len(p.IDs) > 0 {
		ids = p.IDs
	}
	o := s.names.Outbox
	tag, err := s.pool.Exec(ctx, `UPDATE `+o+`
SET state = 'pending', attempts = 0, available_at = `+nowSQL+`, claimed_until = NULL, claim_token = NULL
WHERE state = 'dead' AND id IN (
    SELECT id FROM `+o+` WHERE state = 'dead' AND ($2::bigint[] IS NULL OR id = ANY($2::bigint[]))
      AND ($3 = '' OR kind = $3)
    ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED)`, nullTime(p.Now), ids, p.Kind, limit)
	if err != nil {
		return nil, interpretError("redrive outbox", err)
	}
	return &stores.OutboxRedriveResult{Redriven: tag.RowsAffected()}, nil
}

// PruneOutboxIfDone implements [stores.OutboxStore.PruneOutboxIfDone]; rows
// locked by another pruner are skipped (FOR UPDATE SKIP LOCKED).
func (s *Store) PruneOutboxIfDone(ctx context.Context, p *stores.OutboxPruneParams) (*stores.OutboxPruneResult, error) {
	if p.Before.IsZero() {
		return nil, errors.New("prune outbox: Before is zero")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = stores.OutboxPruneLimitDefault
	}
	o := s.names.Outbox
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+o+` WHERE state = 'done' AND id IN (
    SELECT id FROM `+o+` WHERE state = 'done' AND done_at < $1 ORDER BY done_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
		p.Before, limit)
	if err != nil {
		return nil, interpretError("prune outbox", err)
	}
	return &stores.OutboxPruneResult{Deleted: tag.RowsAffected()}, nil
}

// OutboxStats implements [stores.OutboxStore.OutboxStats] with one query
// that reads only pending, claimed and dead rows, found through their
// partial indexes.
func (s *Store) OutboxStats(ctx context.Context, p *stores.OutboxStatsParams) (*stores.OutboxStatsResult, error) {
	o := s.names.Outbox
	var oldest *time.Time
	res := &stores.OutboxStatsResult{}
	err := s.pool.QueryRow(ctx, `SELECT
    count(*) FILTER (WHERE state = 'pending'),
    count(*) FILTER (WHERE state = 'claimed'),
    min(created_at),
    (SELECT count(*) FROM `+o+` WHERE state = 'dead' AND ($1 = '' OR kind = $1)),
    count(*) FILTER (WHERE state = 'pending' AND attempts = 0 AND available_at > COALESCE($2::timestamptz, now())),
    count(*) FILTER (WHERE state = 'pending' AND attempts > 0 AND available_at > COALESCE($2::timestamptz, now()))
FROM `+o+` WHERE state IN ('pending', 'claimed') AND ($1 = '' OR kind = $1)`, p.Kind, nullTime(p.Now)).
		Scan(&res.Pending, &res.Claimed, &oldest, &res.Dead, &res.Held, &res.Backoff)
	if err != nil {
		return nil, interpretError("outbox stats", err)
	}
	if oldest != nil {
		res.OldestPendingCreatedAt = *oldest
	}
	return res, nil
}

// ListenOutbox implements [stores.OutboxStore.ListenOutbox] with
// PostgreSQL's LISTEN on a connection of its own, opened with the pool's
// connection config (the pool's BeforeConnect and AfterConnect hooks do not
// run) and closed on return: it never holds one of the pool's connections.
// The channel is "ackgap_outbox_" followed by the MD5 of
// "<schema>.<table>" of the outbox table this store uses. It is notified
// after every commit of a transaction from BeginInboxDeferred or
// BeginInboxMany that wrote outbox rows, and by [Store.NotifyOutbox];
// rows written in other transactions are found at the relay's next poll.
func (s *Store) ListenOutbox(ctx context.Context, p *stores.OutboxListenParams) error {
	if p == nil || p.Notify == nil {
		return errors.New("listen outbox: Notify is nil")
	}
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return interpretError("listen outbox: connect", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	channel, err := s.outboxChannel(ctx, conn)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return interpretError("listen outbox", err)
	}
	p.Notify()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return interpretError("listen outbox: wait", err)
		}
		p.Notify()
	}
}

// NotifyOutbox wakes the relays listening on this store's outbox now. Call
// it after committing outbox rows written in a transaction of your own
// (QueueOutboxTx on a pgx.Tx that BeginInboxDeferred did not
// return): without it they are found at the relays' next poll. It returns
// an error wrapping ackgap.ErrStoreUnavailable when the database cannot be
// reached.
func (s *Store) NotifyOutbox(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return interpretError("notify outbox: acquire connection", err)
	}
	defer conn.Release()
	channel, err := s.outboxChannel(ctx, conn.Conn())
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "select pg_notify($1, '')", channel)
	return interpretError("notify outbox", err)
}

// outboxChannel returns the NOTIFY channel of the outbox table, asking
// conn the first time (the table's schema may come from the search_path):
// "ackgap_outbox_" followed by the MD5 of "<schema>.<table>", at most 46
// bytes, under PostgreSQL's 63-byte identifier limit.
func (s *Store) outboxChannel(ctx context.Context, conn *pgx.Conn) (string, error) {
	if ch := s.channel.Load(); ch != nil {
		return *ch, nil
	}
	var channel string
	if err := conn.QueryRow(ctx, `SELECT 'ackgap_outbox_' || md5(n.nspname || '.' || c.relname)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::text::regclass`, s.names.Outbox).Scan(&channel); err != nil {
		return "", interpretError("outbox channel", err)
	}
	s.channel.Store(&channel)
	return channel, nil
}

// scanRow scans the columns of outboxColumns, then extra.
func scanRow(rows pgx.Rows, r *stores.OutboxRow, extra ...any) error {
	var headers []byte
	var state string
	dest := append([]any{&r.ID, &r.Kind, &r.IdempotencyKey, &r.Payload, &headers, &r.Consumer, &r.EventID,
		&state, &r.Attempts, &r.LastError, &r.Now, &r.AvailableAt}, extra...)
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	r.State = stores.OutboxState(state)
	if err := json.Unmarshal(headers, &r.Headers); err != nil {
		return fmt.Errorf("outbox row %d: headers: %w", r.ID, err)
	}
	return nil
}

// newClaimToken returns 16 random bytes as 32 hex digits.
func newClaimToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("claim token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
