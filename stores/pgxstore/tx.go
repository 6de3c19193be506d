package pgxstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/storekit"
)

// pgDivisionByZero is the SQLSTATE the queued outbox insert raises when
// its idempotency key exists with another payload (see queries.outboxQueued).
const pgDivisionByZero = "22012"

// inboxTx is the pgx.Tx that [Store.BeginInboxDeferred] and
// [Store.BeginInboxMany] return: a transaction on a connection of the
// pool that holds statements back to send them together with a later one,
// in the same round trip:
//
//   - while pending (BeginInboxDeferred), its BEGIN and inbox insert: they
//     go with its first statement (an Exec is pipelined behind them; any
//     other statement is sent right after them), or with InboxVerdictTx;
//   - the outbox rows queued by [Store.QueueOutboxTx]: they go ahead of the
//     next statement (Exec, Query, QueryRow, SendBatch, CopyFrom, Prepare,
//     Begin), so that statement sees them, or else with COMMIT.
//
// Conn() and LargeObjects() send a pending BEGIN and inbox insert first
// (with a background context; a failure fails the next statement), but not
// queued rows. After a commit that wrote outbox rows, pg_notify wakes the
// relays, in the same round trip as COMMIT but after it (see migration
// 003). It releases the connection to the pool when the transaction ends.
// Like any pgx.Tx it is not safe for concurrent use.
type inboxTx struct {
	tx      pgx.Tx        // pgx's transaction on conn; nil until BEGIN is sent
	conn    *pgxpool.Conn // released when the transaction ends
	pgConn  *pgx.Conn     // conn's connection, for Conn() after the release
	store   *Store
	pending *stores.BeginInboxParams // BEGIN and inbox insert not sent yet
	queued  []queuedRow
	notify  bool // outbox rows were written: wake relays after the commit
	// progress are the partitions' watermarks to write just before the
	// COMMIT (stores.Progress), for consumer; nil writes nothing.
	progress []stores.Progress
	consumer string
	ended    bool
	// verdict is the inbox insert's outcome once known; err a failure that
	// left it unknown (the transaction is then over).
	verdict *stores.BeginInboxResult[pgx.Tx]
	err     error
}

var _ pgx.Tx = (*inboxTx)(nil)

// queuedRow is a statement held back: an outbox row of QueueOutboxTx, with
// the arguments of queries.outboxQueued, a transition of
// QueueTransitionTx, a SAVEPOINT of Store.SavepointTx (savepoint: its
// quoted name) or a RELEASE of Store.ReleaseSavepointTx that nothing was
// queued ahead of (release: the quoted name).
type queuedRow struct {
	key        string
	args       []any
	transition *queuedTransition
	savepoint  string
	release    string
}

// row reports whether r is an outbox row.
func (r *queuedRow) row() bool { return r.transition == nil && r.savepoint == "" && r.release == "" }

// end marks the transaction over and gives the connection back; pgx
// destroys it rather than reuse it if it is not idle. Only the first call
// does anything.
func (t *inboxTx) end() {
	if t.ended {
		return
	}
	t.ended = true
	t.queued = nil
	t.pending = nil
	t.conn.Release()
}

// abandon ends the transaction after a failed round trip, leaving no
// transaction open on the connection (pgx closes the connection if the
// rollback fails too).
func (t *inboxTx) abandon(ctx context.Context) {
	if t.conn.Conn().PgConn().TxStatus() != 'I' && !t.conn.Conn().IsClosed() {
		_, _ = t.conn.Exec(context.WithoutCancel(ctx), "rollback")
	}
	t.end()
}

// closedErr is what a statement on an ended transaction returns.
func (t *inboxTx) closedErr() error {
	switch {
	case t.err != nil:
		return t.err
	case t.verdict != nil && t.verdict.Duplicate:
		return ackgap.ErrDuplicate
	}
	return pgx.ErrTxClosed
}

// send sends, in one round trip, what the transaction holds back (the
// pending BEGIN and inbox insert, then the queued statements) followed by
// stmt when it is not empty and, with commit, by COMMIT and the relays'
// notification; it returns stmt's command tag. When the first queued
// statement is a transition and the inbox insert is pending, the insert is
// folded into it (see Store.transitionSQL). For a duplicate it rolls back
// (stmt's work with it; with commit, nothing but a folded transition may
// be queued, which wrote nothing, and the COMMIT ends the transaction),
// reads the stored row, ends the transaction and returns
// ackgap.ErrDuplicate. With commit the transaction always ends.
func (t *inboxTx) send(ctx context.Context, commit bool, stmt string, args ...any) (pgconn.CommandTag, error) {
	if t.ended {
		return pgconn.CommandTag{}, t.closedErr()
	}
	p := t.pending
	if p == nil && len(t.queued) == 0 && stmt == "" && !commit {
		return pgconn.CommandTag{}, nil
	}
	if cut := t.savepointCut(); cut > 0 {
		// A transition that never ran may fail to prepare, which would fail
		// the round trip before its SAVEPOINT ran: send the SAVEPOINT first.
		rest := t.queued[cut:]
		t.queued = t.queued[:cut]
		if _, err := t.send(ctx, false, ""); err != nil {
			return pgconn.CommandTag{}, err
		}
		t.queued = rest
	}
	fold := p != nil && len(t.queued) > 0 && t.queued[0].transition != nil
	var b pgx.Batch
	if p != nil {
		b.BeginTx(pgx.TxOptions{})
		if !fold {
			b.Queue(t.store.q.inboxInsert, p.Consumer, p.EventID, p.PayloadHash, nullTime(p.Now), nullString(p.TraceParent))
		}
	}
	for i := 0; i < len(t.queued); i++ {
		r := t.queued[i]
		switch {
		case r.savepoint != "":
			b.Queue("SAVEPOINT " + r.savepoint)
		case r.release != "":
			b.Queue("RELEASE SAVEPOINT " + r.release)
		case r.transition == nil:
			// Consecutive rows go in one statement.
			if j := rowsEnd(t.queued, i); j-i > 1 {
				b.Queue(t.store.q.outboxQueuedMany, manyArgs(t.queued[i:j])...)
				i = j - 1
			} else {
				b.Queue(t.store.q.outboxQueued, r.args...)
			}
		default:
			var inbox *stores.BeginInboxParams
			if i == 0 && fold {
				inbox = p
			}
			sql, args := t.store.transitionSQL(r.transition, inbox)
			b.Queue(sql, args...)
		}
	}
	if stmt != "" {
		b.Queue(stmt, args...)
	}
	trail := false // the commit does not carry the relays' notification
	progress := commit && len(t.progress) > 0
	if progress {
		b.Queue(t.store.q.progress, progressArgs(t.consumer, t.progress)...)
	}
	if commit {
		b.Queue("commit")
		if t.notify {
			// Resolved once per store; a failure only costs the wake-up.
			channel, err := t.store.outboxChannel(ctx, t.pgConn)
			if err == nil && t.store.notifier.lead(time.Now()) {
				b.Queue("select pg_notify($1, '')", channel)
			} else {
				trail = err == nil
			}
		}
	}
	var br pgx.BatchResults
	if p != nil {
		br = t.conn.SendBatch(ctx, &b)
		t.tx = br.Tx()
		t.pending = nil
	} else {
		br = t.tx.SendBatch(ctx, &b)
	}
	duplicate := false
	if p != nil {
		_, err := br.Exec() // BEGIN
		if err == nil && !fold {
			var tag pgconn.CommandTag
			tag, err = br.Exec()
			duplicate = tag.RowsAffected() == 0
		}
		if err != nil {
			_ = br.Close()
			// pgx prepares every statement of the round trip before it runs
			// the first, so a statement sent with BEGIN (one the handler
			// queued, or the one that sent the round trip) that the server
			// cannot prepare (a missing table) fails here too.
			op := "begin and insert inbox row"
			if len(t.queued) > 0 || stmt != "" {
				op = "begin, insert inbox row and send the handler's first statements"
			}
			t.err = interpretError(op, err)
			t.abandon(ctx)
			return pgconn.CommandTag{}, t.err
		}
	}
	inserted, err := t.readQueued(br, fold)
	if fold {
		if err != nil && !refusedOrConflict(err) {
			// The inbox insert's outcome is unknown.
			_ = br.Close()
			t.err = err
			t.abandon(ctx)
			return pgconn.CommandTag{}, err
		}
		duplicate = err == nil && !inserted
	}
	var tag, commitTag pgconn.CommandTag
	if err == nil && stmt != "" {
		tag, err = br.Exec()
	}
	if err == nil && progress {
		if _, err = br.Exec(); err != nil {
			err = interpretError("write progress row", err)
		}
	}
	if err == nil && commit {
		commitTag, err = br.Exec()
	}
	// After a COMMIT that returned, the notification only wakes relays
	// early (they poll too): its failure is not the commit's.
	if cerr := br.Close(); err == nil && cerr != nil && !commit {
		err = interpretError("send queued statements", cerr)
	}
	if err == nil {
		for _, r := range t.queued {
			if r.transition != nil {
				sql, _ := t.store.transitionSQL(r.transition, nil)
				t.store.ranTransitions.Store(sql, struct{}{})
			}
		}
	}
	t.queued = nil
	if duplicate {
		return pgconn.CommandTag{}, t.duplicate(ctx, p, !commit)
	}
	if p != nil {
		t.verdict = &stores.BeginInboxResult[pgx.Tx]{Tx: t}
	}
	if !commit {
		return tag, err
	}
	if err != nil {
		// A queued statement failed and the COMMIT was skipped, or the
		// commit itself failed.
		t.abandon(ctx)
		return pgconn.CommandTag{}, err
	}
	t.end()
	if commitTag.String() == "ROLLBACK" {
		return pgconn.CommandTag{}, pgx.ErrTxCommitRollback // the transaction had failed before
	}
	if trail {
		t.store.notifier.trail(time.Now())
	}
	return pgconn.CommandTag{}, nil
}

// duplicate handles an inbox insert that found its row: it rolls back
// (unless the transaction ended already) and reads the stored row's
// payload hash and trace context in one round trip, then ends the
// transaction. It returns ackgap.ErrDuplicate, or the
// error that left the outcome unknown.
func (t *inboxTx) duplicate(ctx context.Context, p *stores.BeginInboxParams, rollback bool) error {
	var stored []byte
	var traceParent *string
	var b pgx.Batch
	if rollback {
		b.Queue("rollback")
	}
	// After the ROLLBACK, in a statement of its own: under READ COMMITTED it
	// sees a row a concurrent delivery committed while the insert waited.
	b.Queue(t.store.q.inboxHash, p.Consumer, p.EventID).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&stored, &traceParent)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err := t.conn.SendBatch(ctx, &b).Close(); err != nil {
		t.err = interpretError("roll back duplicate and read its inbox row", err)
		t.abandon(ctx)
		return t.err
	}
	t.verdict = &stores.BeginInboxResult[pgx.Tx]{
		Duplicate:       true,
		PayloadMismatch: stored != nil && p.PayloadHash != nil && !bytes.Equal(stored, p.PayloadHash),
	}
	if traceParent != nil {
		t.verdict.TraceParent = *traceParent
	}
	t.end()
	return ackgap.ErrDuplicate
}

// readQueued reads the results of the queued statements from br and
// returns the first error: a conflicting key as
// storekit.IdempotencyConflict, a refused transition as the permanent error
// of TransitionResult.Err. inserted is what a folded inbox insert did
// (true without one).
func (t *inboxTx) readQueued(br pgx.BatchResults, fold bool) (inserted bool, err error) {
	inserted = true
	for i := 0; i < len(t.queued); i++ {
		r := t.queued[i]
		if r.transition != nil {
			var ins, applied bool
			var refused *int32
			if err := br.QueryRow().Scan(&ins, &refused, &applied); err != nil {
				return false, r.transition.mapError(err)
			}
			r.transition.ran(applied)
			if i == 0 && fold {
				inserted = ins
			}
			continue
		}
		if r.savepoint != "" {
			if _, err := br.Exec(); err != nil {
				return false, interpretError("savepoint", err)
			}
			continue
		}
		if r.release != "" {
			if _, err := br.Exec(); err != nil {
				return false, interpretError("release savepoint", err)
			}
			continue
		}
		key := r.key
		if j := rowsEnd(t.queued, i); j-i > 1 {
			keys := make([]string, 0, j-i)
			for _, q := range t.queued[i:j] {
				keys = append(keys, q.key)
			}
			key = strings.Join(keys, ", ")
			i = j - 1
		}
		if _, err := br.Exec(); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == pgDivisionByZero {
				return false, storekit.IdempotencyConflict(key)
			}
			return false, interpretError("insert queued outbox row", err)
		}
	}
	return inserted, nil
}

// progressArgs returns the arguments of queries.progress for ps.
func progressArgs(consumer string, ps []stores.Progress) []any {
	topics := make([]string, len(ps))
	partitions := make([]int32, len(ps))
	marks := make([]int64, len(ps))
	for i, p := range ps {
		topics[i], partitions[i], marks[i] = p.Topic, p.Partition, p.Watermark
	}
	return []any{consumer, topics, partitions, marks}
}

// rowsEnd returns the end of the run of outbox rows (not transitions) of
// q that starts at i: they are sent as one statement.
func rowsEnd(q []queuedRow, i int) int {
	j := i
	for j < len(q) && q[j].row() {
		j++
	}
	return j
}

// manyArgs lays the arguments of rows (each those of queries.outboxQueued)
// out as the arrays of queries.outboxQueuedMany.
func manyArgs(rows []queuedRow) []any {
	n := len(rows)
	kinds, keys, headers, consumers, eventIDs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	payloads, hashes := make([][]byte, n), make([][]byte, n)
	created, available := make([]*time.Time, n), make([]*time.Time, n)
	for i, r := range rows {
		a := r.args
		kinds[i], keys[i], payloads[i], hashes[i] = a[0].(string), a[1].(string), a[2].([]byte), a[3].([]byte)
		headers[i], consumers[i], eventIDs[i] = string(a[4].([]byte)), a[5].(string), a[6].(string)
		created[i], available[i] = a[7].(*time.Time), a[8].(*time.Time)
	}
	return []any{kinds, keys, payloads, hashes, headers, consumers, eventIDs, created, available}
}

// flush sends what the transaction holds back now, in one round trip,
// ahead of another statement. After an error the transaction is aborted:
// everything that follows fails until the rollback.
func (t *inboxTx) flush(ctx context.Context) error {
	_, err := t.send(ctx, false, "")
	return err
}

// resolveInbox sends a pending BEGIN and inbox insert alone, so that the
// verdict is known; queued statements wait for the next statement or the
// commit, which report their errors.
func (t *inboxTx) resolveInbox(ctx context.Context) {
	if t.pending == nil {
		return
	}
	queued := t.queued
	t.queued = nil
	_ = t.flush(ctx) // sets t.verdict, or t.err
	if !t.ended {
		t.queued = queued
	}
}

// Commit commits the transaction; queued statements are sent in the same
// round trip, ahead of the COMMIT, and when the transaction wrote outbox
// rows a pg_notify follows the COMMIT in a transaction of its own. A
// pending BEGIN and inbox insert go in that round trip too when nothing
// else is queued, or only a transition (the insert is folded into it): a
// duplicate then writes nothing, and Commit returns ackgap.ErrDuplicate.
// Otherwise they are sent first, in a round trip of their own. When a queued
// statement fails (an idempotency key that exists with another payload:
// storekit.IdempotencyConflict; a refused transition: ackgap's permanent
// ErrTransitionRefused), the COMMIT does not run, the transaction is
// rolled back and Commit returns that error.
func (t *inboxTx) Commit(ctx context.Context) error {
	if len(t.queued) > 1 || len(t.queued) == 1 && t.queued[0].transition == nil {
		// (A queued SAVEPOINT counts as a row here: it must not carry the
		// inbox insert's fold either.)
		t.resolveInbox(ctx) // a duplicate's queued rows must not reach the COMMIT
	}
	if t.ended {
		return t.closedErr()
	}
	if t.pending == nil && len(t.queued) == 0 && !t.notify && len(t.progress) == 0 {
		defer t.end()
		return t.tx.Commit(ctx)
	}
	_, err := t.send(ctx, true, "")
	return err
}

// Rollback rolls the transaction back and discards queued rows. After the
// transaction ended it returns pgx.ErrTxClosed.
func (t *inboxTx) Rollback(ctx context.Context) error {
	if t.ended {
		return pgx.ErrTxClosed
	}
	defer t.end()
	if t.tx == nil {
		return nil // pending: nothing was sent
	}
	return t.tx.Rollback(ctx)
}

// Begin sends queued rows, then starts a pseudo nested transaction (a
// savepoint) with pgx. Rows queued through the nested transaction are
// inserted at once.
func (t *inboxTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return t.tx.Begin(ctx)
}

func (t *inboxTx) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	if err := t.flush(ctx); err != nil {
		return 0, err
	}
	return t.tx.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

func (t *inboxTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.flush(ctx); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return t.tx.SendBatch(ctx, b)
}

// LargeObjects sends a pending BEGIN and inbox insert first.
func (t *inboxTx) LargeObjects() pgx.LargeObjects {
	if t.pending != nil {
		_ = t.flush(context.Background()) // a failure fails the next statement
	}
	if t.tx == nil {
		return closedTx().LargeObjects()
	}
	return t.tx.LargeObjects()
}

// closedTx returns a pgx.Tx that is over: every method returns an error
// wrapping pgx.ErrTxClosed.
func closedTx() pgx.Tx {
	var b pgx.Batch
	b.BeginTx(pgx.TxOptions{})
	return pgx.FailedBatchResults(&b, pgx.ErrTxClosed).Tx()
}

func (t *inboxTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return t.tx.Prepare(ctx, name, sql)
}

// Exec runs sql in the transaction. When it holds statements back (a
// pending BEGIN and inbox insert, queued outbox rows), sql goes in the
// same round trip, behind them, if it has arguments and no pgx option
// (QueryExecMode, QueryRewriter) among them: pgx sends a statement without
// arguments with the simple protocol, which may carry several statements
// and cannot be pipelined. Otherwise they are sent first. For a duplicate
// the inbox insert found, sql's work is rolled back and Exec returns
// ackgap.ErrDuplicate.
func (t *inboxTx) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	if (t.pending != nil || len(t.queued) > 0) && pipelinable(arguments) && !t.holdsSavepoint() {
		return t.send(ctx, false, sql, arguments...)
	}
	if err := t.flush(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.tx.Exec(ctx, sql, arguments...)
}

// savepointCut returns the length of the prefix of the queue to send on
// its own, ahead of the rest: up to and including the last held SAVEPOINT
// that a transition follows whose text never ran (0: none). pgx prepares
// a batch's new statements before running any, so a transition on a
// missing table would fail the round trip before the SAVEPOINT ran, and
// the rollback to it could not isolate the failure to its message.
func (t *inboxTx) savepointCut() int {
	cut := 0
	for i, r := range t.queued {
		if r.savepoint != "" {
			for _, after := range t.queued[i+1:] {
				if after.transition == nil {
					continue
				}
				sql, _ := t.store.transitionSQL(after.transition, nil)
				if _, ok := t.store.ranTransitions.Load(sql); !ok {
					cut = i + 1
					break
				}
			}
		}
	}
	return cut
}

// holdsSavepoint reports whether a SAVEPOINT or a RELEASE is held back. A
// statement of the caller's own is then not pipelined behind it: pgx
// prepares every new statement of a batch before running any, so one that
// fails to prepare (an unknown table) would fail the batch before the
// SAVEPOINT ran, and the rollback to it could not recover the transaction
// (or before the RELEASE ran, and a rollback to the released savepoint
// would find it still there). The store's own statements (outbox rows,
// transitions, RELEASE, COMMIT) do ride with it.
func (t *inboxTx) holdsSavepoint() bool {
	for i := range t.queued {
		if t.queued[i].savepoint != "" || t.queued[i].release != "" {
			return true
		}
	}
	return false
}

// holdsRelease reports whether a RELEASE is held back.
func (t *inboxTx) holdsRelease() bool {
	for i := range t.queued {
		if t.queued[i].release != "" {
			return true
		}
	}
	return false
}

// pipelinable reports whether a statement with these arguments can be
// queued in a pgx.Batch and mean what Exec would make of it.
func pipelinable(arguments []any) bool {
	if len(arguments) == 0 {
		return false
	}
	switch arguments[0].(type) {
	case pgx.QueryExecMode, pgx.QueryRewriter:
		return false
	}
	return true
}

func (t *inboxTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.flush(ctx); err != nil {
		return errRows{err}, err
	}
	return t.tx.Query(ctx, sql, args...)
}

func (t *inboxTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.flush(ctx); err != nil {
		return errRows{err}
	}
	return t.tx.QueryRow(ctx, sql, args...)
}

// Conn returns the transaction's connection, after sending a pending BEGIN
// and inbox insert (queued rows stay queued, unless a RELEASE is held
// back: then the queue is sent, so that what runs on the connection runs
// after the RELEASE, as it was asked first).
func (t *inboxTx) Conn() *pgx.Conn {
	if t.pending != nil || t.holdsRelease() {
		_ = t.flush(context.Background()) // a failure fails the next statement
	}
	return t.pgConn
}

// errRows are the rows, and the row, of a statement that was not sent
// because the queued rows ahead of it failed.
type errRows struct{ err error }

var (
	_ pgx.Rows = errRows{}
	_ pgx.Row  = errRows{}
)

func (errRows) Close()                                       {}
func (r errRows) Err() error                                 { return r.err }
func (errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (errRows) Next() bool                                   { return false }
func (r errRows) Scan(...any) error                          { return r.err }
func (r errRows) Values() ([]any, error)                     { return nil, r.err }
func (errRows) RawValues() [][]byte                          { return nil }
func (errRows) Conn() *pgx.Conn                              { return nil }
func (errRows) TypeMap() *pgtype.Map                         { return nil }
