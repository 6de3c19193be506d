package pgxstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/internal/sqlbuild"
	"github.com/ackgap/ackgap/stores/storekit"
)

// pgCardinalityViolation is the SQLSTATE a queued transition raises when
// it is refused (see queuedTransition.sql).
const pgCardinalityViolation = "21000"

// queuedTransition is a guarded transition held back by
// QueueTransitionTx, with the arguments of its outbox rows.
type queuedTransition struct {
	tp   ackgap.Transition // with defaults, validated
	rows [][]any           // outboxArgs of each row
	keys []string          // the rows' idempotency keys
	// onRan is QueueTransitionParams.Ran.
	onRan func(applied bool)
}

// ran reports that the statement ran: applied says whether the UPDATE
// changed the row (and the rows were written).
func (q *queuedTransition) ran(applied bool) {
	if q.onRan != nil {
		q.onRan(applied)
	}
}

// QueueTransitionTx implements [stores.Store.QueueTransitionTx]
// with one statement: the UPDATE of the transition and the INSERT of its
// rows as data-modifying CTEs (the INSERT selects its rows only when the
// UPDATE returned one), and a check that fails the statement when the
// transition was refused. On a transaction from BeginInboxDeferred the
// statement is held back like a queued outbox row;
// when it is the first thing the transaction sends, the inbox insert joins
// it as a third CTE, which the UPDATE requires (so a duplicate writes
// nothing even in a batch that ends with COMMIT), and a message whose
// handler does nothing else takes one round trip: BEGIN, the statement,
// COMMIT, pg_notify. On any other pgx.Tx it runs at once.
//
// Errors: invalid params at once; a refused transition, from the statement
// that carries it or from CommitTx, as a permanent error wrapping
// ackgap.ErrTransitionRefused (reason ackgap.ReasonTransitionRefused; the
// transaction is then aborted, or rolled back by CommitTx); a row whose
// idempotency key exists with another payload as
// storekit.IdempotencyConflict.
func (s *Store) QueueTransitionTx(ctx context.Context, tx pgx.Tx, p *stores.QueueTransitionParams) error {
	q, err := newQueuedTransition(p)
	if err != nil {
		return err
	}
	if t, ok := tx.(*inboxTx); ok && t.store == s && !t.ended {
		t.queued = append(t.queued, queuedRow{transition: q})
		if dueSoon(time.Now(), p.Outbox...) {
			t.notify = true
		}
		return nil
	}
	sql, args := s.transitionSQL(q, nil)
	var inserted, applied bool
	var refused *int32
	if err := q.mapError(tx.QueryRow(ctx, sql, args...).Scan(&inserted, &refused, &applied)); err != nil {
		return err
	}
	q.ran(applied)
	return nil
}

// newQueuedTransition validates p and builds its queued form. Rows with
// one idempotency key are written once; with different payloads they
// conflict at once.
func newQueuedTransition(p *stores.QueueTransitionParams) (*queuedTransition, error) {
	q := &queuedTransition{tp: p.Transition.WithDefaults(), onRan: p.Ran}
	if err := q.tp.Validate(); err != nil {
		return nil, err
	}
	hashes := map[string][]byte{}
	for i := range p.Outbox {
		args, hash, err := outboxArgs(&p.Outbox[i])
		if err != nil {
			return nil, err
		}
		key := p.Outbox[i].IdempotencyKey
		if h, ok := hashes[key]; ok {
			if string(h) != string(hash) {
				return nil, storekit.IdempotencyConflict(key)
			}
			continue
		}
		hashes[key] = hash
		q.rows = append(q.rows, args)
		q.keys = append(q.keys, key)
	}
	return q, nil
}

// mapError translates the statement's error: a refusal (the check's
// subquery returned two rows) and an idempotency conflict (division by
// zero in the rows' ON CONFLICT) become ackgap's permanent errors.
func (q *queuedTransition) mapError(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case pgCardinalityViolation:
			if q.tp.To == "" {
				return ackgap.Permanent(ackgap.ReasonTransitionRefused, fmt.Errorf("%w: %s %s=%v does not pass the guard or has no row",
					ackgap.ErrTransitionRefused, q.tp.Table, q.tp.KeyColumn, q.tp.Key))
			}
			return ackgap.Permanent(ackgap.ReasonTransitionRefused, fmt.Errorf("%w: %s %s=%v is not in %s %v, does not pass the guard, or has no row (queued transition to %q)",
				ackgap.ErrTransitionRefused, q.tp.Table, q.tp.KeyColumn, q.tp.Key, q.tp.StateColumn, q.tp.From, q.tp.To))
		case pgDivisionByZero:
			return storekit.IdempotencyConflict(strings.Join(q.keys, ", "))
		}
	}
	return interpretError("queued transition", err)
}

// refused reports whether err is one of mapError's permanent outcomes,
// which the statement raises only after its inbox insert inserted.
func refusedOrConflict(err error) bool {
	return errors.Is(err, ackgap.ErrTransitionRefused) || errors.Is(err, ackgap.ErrIdempotencyConflict)
}

// transitionSQL renders q as one statement returning one row: whether the
// inbox insert inserted (true without one) and the refusal check, which
// raises cardinality_violation (a scalar subquery of two rows) when the
// row is not in a From state and, for a To outside From, not already in
// To (read FOR SHARE, so as the UPDATE found it after any wait, not as the
// statement's snapshot has it). With inbox
// non-nil the inbox insert is the first CTE and the UPDATE runs only when
// it inserted. The text depends only on q's shape (names, how many From
// states, Set columns and rows, whether inbox is folded in), so it is
// built once per shape and kept (up to transitionSQLMax shapes); the
// arguments are laid out as transitionArgs says.
func (s *Store) transitionSQL(q *queuedTransition, inbox *stores.BeginInboxParams) (string, []any) {
	args := transitionArgs(q, inbox)
	shape := transitionShape{
		schema: q.tp.Schema, table: q.tp.Table, key: q.tp.KeyColumn, state: q.tp.StateColumn, version: q.tp.VersionColumn,
		from: len(q.tp.From), rows: len(q.rows), inbox: inbox != nil, toInFrom: slices.Contains(q.tp.From, q.tp.To),
		noState: q.tp.To == "",
	}
	for _, a := range q.tp.Set {
		shape.set += storekit.QuoteIdentifier(a.Column) + string(a.Op) + ","
	}
	for _, g := range q.tp.Guards {
		shape.guards += storekit.QuoteIdentifier(g.Column) + string(g.Op) + ","
	}
	if sql, ok := s.transitions.Load(shape); ok {
		return sql.(string), args
	}
	sql := buildTransitionSQL(s.names.Inbox, s.names.Outbox, &q.tp, shape)
	if s.transitionsCount.Add(1) <= transitionSQLMax {
		s.transitions.Store(shape, sql)
	}
	return sql, args
}

// transitionSQLMax bounds the shapes of queued transitions whose text a
// store keeps.
const transitionSQLMax = 256

// transitionShape is what the text of a queued transition depends on.
type transitionShape struct {
	schema, table, key, state, version string
	set                                string // the quoted Set columns, each with its op and a comma
	guards                             string // the quoted Guards columns, each with its op and a comma
	from, rows                         int
	inbox, toInFrom, noState           bool
}

// transitionArgs lays out the arguments of a queued transition: the inbox
// row's five (consumer, event id, payload hash, received at, trace
// parent) when inbox is folded in, To (unless ""), the Set values, Key,
// the From states, the Guards values, then nine per outbox row
// (outboxArgs' order).
func transitionArgs(q *queuedTransition, inbox *stores.BeginInboxParams) []any {
	tp := &q.tp
	args := make([]any, 0, 5+2+len(tp.Set)+len(tp.From)+len(tp.Guards)+9*len(q.rows))
	if inbox != nil {
		args = append(args, inbox.Consumer, inbox.EventID, inbox.PayloadHash, nullTime(inbox.Now), nullString(inbox.TraceParent))
	}
	if tp.To != "" {
		args = append(args, tp.To)
	}
	for _, a := range tp.Set {
		args = append(args, a.Value)
	}
	args = append(args, tp.Key)
	for _, f := range tp.From {
		args = append(args, f)
	}
	for _, g := range tp.Guards {
		args = append(args, g.Value)
	}
	for _, r := range q.rows {
		args = append(args, r...)
	}
	return args
}

// buildTransitionSQL writes the text of a queued transition of shape sh,
// with the placeholders transitionArgs lays out.
func buildTransitionSQL(inboxTable, outboxTable string, tp *ackgap.Transition, sh transitionShape) string {
	n := 0
	next := func() string {
		n++
		return "$" + strconv.Itoa(n)
	}
	var b strings.Builder
	if sh.inbox {
		b.WriteString("WITH i AS (INSERT INTO " + inboxTable + " (consumer, event_id, payload_hash, received_at, trace_parent) VALUES (")
		b.WriteString(next() + "::text, " + next() + "::text, " + next() + "::bytea, COALESCE(" + next() + "::timestamptz, now()), " + next() + "::text) ON CONFLICT DO NOTHING RETURNING 1)")
	} else {
		b.WriteString("WITH i AS (SELECT 1)")
	}
	table := storekit.QuoteIdentifier(tp.Table)
	if tp.Schema != "" {
		table = storekit.QuoteIdentifier(tp.Schema) + "." + table
	}
	state, key := storekit.QuoteIdentifier(tp.StateColumn), storekit.QuoteIdentifier(tp.KeyColumn)
	bind := func(any) string { return next() }
	var set []string
	to := ""
	if !sh.noState {
		to = next()
		set = append(set, state+" = "+to)
	}
	set = append(set, sqlbuild.SetClauses(tp, bind)...)
	keyArg := next()
	b.WriteString(", t AS (UPDATE " + table + " SET " + strings.Join(set, ", ") + " WHERE " + key + " = " + keyArg)
	if !sh.noState {
		b.WriteString(" AND " + state + " IN (")
		for i := range sh.from {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(next())
		}
		b.WriteString(")")
	}
	b.WriteString(sqlbuild.GuardClauses(tp, bind))
	b.WriteString(" AND EXISTS (SELECT 1 FROM i) RETURNING 1)")
	if sh.rows > 0 {
		b.WriteString(", o AS (INSERT INTO " + outboxTable + ` AS o (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
SELECT v.kind, v.idempotency_key, v.payload, v.payload_hash, v.headers, v.consumer, v.event_id, COALESCE(v.created_at, now()), COALESCE(v.available_at, v.created_at, now())
FROM (VALUES `)
		for i := range sh.rows {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(" + next() + "::text, " + next() + "::text, " + next() + "::bytea, " + next() + "::bytea, " +
				next() + "::jsonb, " + next() + "::text, " + next() + "::text, " + next() + "::timestamptz, " + next() + "::timestamptz)")
		}
		b.WriteString(`) AS v (kind, idempotency_key, payload, payload_hash, headers, consumer, event_id, created_at, available_at)
WHERE EXISTS (SELECT 1 FROM t)
ON CONFLICT (idempotency_key) DO UPDATE SET kind = o.kind WHERE 1 / (o.payload_hash = excluded.payload_hash)::int = 0)`)
	}
	b.WriteString("\nSELECT EXISTS (SELECT 1 FROM i), (SELECT 1 FROM (VALUES (1), (2)) AS refused (n) WHERE EXISTS (SELECT 1 FROM i) AND NOT EXISTS (SELECT 1 FROM t)")
	if !sh.toInFrom && !sh.noState {
		// Already in To is not a refusal. The state is read with FOR SHARE:
		// a row another transaction moved while the UPDATE waited on it is
		// then read as that transaction left it, not as this statement's
		// snapshot has it (READ COMMITTED re-reads a locked row's newest
		// version). CASE keeps the lock off a row this statement updated.
		b.WriteString(" AND CASE WHEN EXISTS (SELECT 1 FROM t) THEN false ELSE (SELECT " + state + " FROM " + table +
			" WHERE " + key + " = " + keyArg + " FOR SHARE) IS DISTINCT FROM " + to + " END")
	}
	b.WriteString("), EXISTS (SELECT 1 FROM t)")
	return b.String()
}
