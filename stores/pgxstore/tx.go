package pgxstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ackgap/ackgap/stores"
)

// pgDivisionByZero is the SQLSTATE the queued outbox insert raises when
// its idempotency key exists with another payload (see queries.outboxQueued).
const pgDivisionByZero = "22012"

// inboxTx is the pgx.Tx that [Store.BeginInbox] returns: the transaction
// pgx began on a connection of the pool, plus the outbox rows queued by
// [Store.QueueOutboxTx]. Queued rows are sent ahead of the next statement
// that goes through it (Exec, Query, QueryRow, SendBatch, CopyFrom,
// Prepare, Begin), so that statement sees them, or else together with
// COMMIT, in the same round trip. Statements sent through Conn() or
// LargeObjects() do not send them first. It releases the connection to
// the pool when the transaction ends. Like any pgx.Tx it is not safe for
// concurrent use.
type inboxTx struct {
	tx     pgx.Tx        // pgx's transaction on conn
	conn   *pgxpool.Conn // released when the transaction ends
	store  *Store
	queued []queuedRow
	ended  bool
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
	t.conn.Release()
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

// flush sends the queued rows now, in one round trip, ahead of another
// statement. After an error the transaction is aborted: everything that
// follows fails until the rollback.
func (t *inboxTx) flush(ctx context.Context) error {
	if len(t.queued) == 0 {
		return nil
	}
	if t.ended {
		return pgx.ErrTxClosed
	}
	var b pgx.Batch
	t.queue(&b)
	br := t.tx.SendBatch(ctx, &b)
	err := t.readQueued(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = interpretError("insert queued outbox rows", cerr)
	}
	t.queued = nil
	return err
}

// Commit commits the transaction; queued rows are sent in the same round
// trip, ahead of the COMMIT. When a queued row's key exists with another
// payload, the COMMIT does not run: the transaction is rolled back and
// Commit returns stores.IdempotencyConflict (permanent, wrapping
// ackgap.ErrIdempotencyConflict).
func (t *inboxTx) Commit(ctx context.Context) error {
	if t.ended {
		return pgx.ErrTxClosed
	}
	defer t.end()
	if len(t.queued) == 0 {
		return t.tx.Commit(ctx)
	}
	var b pgx.Batch
	t.queue(&b)
	b.Queue("commit")
	br := t.tx.SendBatch(ctx, &b)
	err := t.readQueued(br)
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// A queued insert failed and the COMMIT was skipped, or the commit
		// itself failed. Leave no transaction open on the connection (pgx
		// closes it if the rollback fails too).
		if t.conn.Conn().PgConn().TxStatus() != 'I' && !t.conn.Conn().IsClosed() {
			_ = t.tx.Rollback(context.WithoutCancel(ctx))
		}
		return err
	}
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

func (t *inboxTx) LargeObjects() pgx.LargeObjects { return t.tx.LargeObjects() }

func (t *inboxTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return t.tx.Prepare(ctx, name, sql)
}

func (t *inboxTx) Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error) {
	if err := t.flush(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.tx.Exec(ctx, sql, arguments...)
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

func (t *inboxTx) Conn() *pgx.Conn { return t.tx.Conn() }

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
