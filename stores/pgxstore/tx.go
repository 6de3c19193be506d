package pgxstore

import (
	"bytes"
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// pgDivisionByZero is the SQLSTATE the queued outbox insert raises when
// its idempotency key exists with another payload (see queries.outboxQueued).
const pgDivisionByZero = "22012"

// inboxTx is the pgx.Tx that [Store.BeginInbox] and
// [Store.BeginInboxDeferred] return: a transaction on a connection of the
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
	ended   bool
	// verdict is the inbox insert's outcome once known; err a failure that
	// left it unknown (the transaction is then over).
	verdict *stores.BeginInboxResult[pgx.Tx]
	err     error
}

var _ pgx.Tx = (*inboxTx)(nil)

// queuedRow is one outbox row held back by QueueOutboxTx, with the
// arguments of queries.outboxQueued.
type queuedRow struct {
	key  string
	args []any
}

// end marks the transaction over and gives the connection back; pgx
// destroys it rather than reuse it if it is not idle.
func (t *inboxTx) end() {
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
// pending BEGIN and inbox insert, then the queued outbox rows) followed by
// stmt when it is not empty, and returns stmt's command tag. For a
// duplicate it rolls back (stmt's work with it), reads the stored row in
// the same second round trip, ends the transaction and returns
// ackgap.ErrDuplicate.
func (t *inboxTx) send(ctx context.Context, stmt string, args ...any) (pgconn.CommandTag, error) {
	if t.ended {
		return pgconn.CommandTag{}, t.closedErr()
	}
	p := t.pending
	if p == nil && len(t.queued) == 0 && stmt == "" {
		return pgconn.CommandTag{}, nil
	}
	var b pgx.Batch
	if p != nil {
		b.BeginTx(pgx.TxOptions{})
		b.Queue(t.store.q.inboxInsert, p.Consumer, p.EventID, p.PayloadHash, nullTime(p.Now), nullString(p.TraceParent))
	}
	t.queue(&b)
	if stmt != "" {
		b.Queue(stmt, args...)
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
		var tag pgconn.CommandTag
		if err == nil {
			tag, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			t.err = interpretError("begin and insert inbox row", err)
			t.abandon(ctx)
			return pgconn.CommandTag{}, t.err
		}
		duplicate = tag.RowsAffected() == 0
	}
	err := t.readQueued(br)
	var tag pgconn.CommandTag
	if err == nil && stmt != "" {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = interpretError("send queued statements", cerr)
	}
	t.queued = nil
	if duplicate {
		return pgconn.CommandTag{}, t.duplicate(ctx, p)
	}
	if p != nil {
		t.verdict = &stores.BeginInboxResult[pgx.Tx]{Tx: t}
	}
	return tag, err
}

// duplicate handles an inbox insert that found its row: it rolls back and
// reads the stored row's payload hash and trace context in one round
// trip, then ends the transaction. It returns ackgap.ErrDuplicate, or the
// error that left the outcome unknown.
func (t *inboxTx) duplicate(ctx context.Context, p *stores.BeginInboxParams) error {
	var stored []byte
	var traceParent *string
	var b pgx.Batch
	b.Queue("rollback")
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

// queue appends the queued rows' inserts to b.
func (t *inboxTx) queue(b *pgx.Batch) {
	for _, r := range t.queued {
		b.Queue(t.store.q.outboxQueued, r.args...)
	}
}

// readQueued reads the results of the queued rows' inserts from br and
// returns the first error, a conflicting key as stores.IdempotencyConflict.
func (t *inboxTx) readQueued(br pgx.BatchResults) error {
	for _, r := range t.queued {
		if _, err := br.Exec(); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == pgDivisionByZero {
				return stores.IdempotencyConflict(r.key)
			}
			return interpretError("insert queued outbox row", err)
		}
	}
	return nil
}

// flush sends what the transaction holds back now, in one round trip,
// ahead of another statement. After an error the transaction is aborted:
// everything that follows fails until the rollback.
func (t *inboxTx) flush(ctx context.Context) error {
	_, err := t.send(ctx, "")
	return err
}

// Commit commits the transaction; queued rows are sent in the same round
// trip, ahead of the COMMIT, and when the transaction wrote outbox rows a
// pg_notify follows the COMMIT in a transaction of its own. A pending
// BEGIN and inbox insert are sent first, in a round trip of their own: a
// duplicate is rolled back and returns ackgap.ErrDuplicate. When a queued
// row's key exists with another payload, the COMMIT does not run: the
// transaction is rolled back and Commit returns stores.IdempotencyConflict
// (permanent, wrapping ackgap.ErrIdempotencyConflict).
func (t *inboxTx) Commit(ctx context.Context) error {
	if t.pending != nil {
		if err := t.flush(ctx); err != nil {
			return err
		}
	}
	if t.ended {
		return t.closedErr()
	}
	defer t.end()
	var channel string
	if t.notify {
		// Resolved once per store; a failure only costs the wake-up.
		channel, _ = t.store.outboxChannel(ctx, t.conn.Conn())
	}
	if len(t.queued) == 0 && channel == "" {
		return t.tx.Commit(ctx)
	}
	var b pgx.Batch
	t.queue(&b)
	b.Queue("commit")
	if channel != "" {
		b.Queue("select pg_notify($1, '')", channel)
	}
	br := t.tx.SendBatch(ctx, &b)
	err := t.readQueued(br)
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if err != nil {
		_ = br.Close()
		// A queued insert failed and the COMMIT was skipped, or the commit
		// itself failed.
		if t.conn.Conn().PgConn().TxStatus() != 'I' && !t.conn.Conn().IsClosed() {
			_ = t.tx.Rollback(context.WithoutCancel(ctx))
		}
		return err
	}
	// The commit is done; the notification that follows it only wakes
	// relays early (they poll too), so its failure is not the commit's.
	_ = br.Close()
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback // the transaction had failed before
	}
	return nil
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
	if (t.pending != nil || len(t.queued) > 0) && pipelinable(arguments) {
		return t.send(ctx, sql, arguments...)
	}
	if err := t.flush(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.tx.Exec(ctx, sql, arguments...)
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
// and inbox insert (queued rows stay queued).
func (t *inboxTx) Conn() *pgx.Conn {
	if t.pending != nil {
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
