package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
)

// stmtCacheMax bounds the statements a store keeps prepared: the fixed
// inbox and outbox statements plus one per distinct guarded transition
// (table, columns, number of From states and Set columns).
const stmtCacheMax = 256

// stmtCache keeps the store's hot statements prepared, so that SQLite
// parses each once per connection instead of once per execution
// (modernc.org/sqlite keeps a prepared statement compiled; database/sql
// prepares a *sql.Stmt again on each connection that runs it, inside the
// caller's transaction).
//
// Statements are prepared only where no connection is held: in BeginInboxDeferred
// before it begins the transaction (db.PrepareContext takes a connection
// of its own, and one held by the caller could be the last). A statement
// first met inside a transaction (a guarded transition) runs unprepared
// there and is prepared by the next BeginInboxDeferred.
type stmtCache struct {
	db      *sql.DB
	stmts   sync.Map // query -> *sql.Stmt
	mu      sync.Mutex
	wanted  []string    // queries to prepare, guarded by mu
	pending atomic.Bool // wanted is not empty
	count   atomic.Int32
	closed  bool // guarded by mu
}

func newStmtCache(db *sql.DB, queries ...string) *stmtCache {
	c := &stmtCache{db: db, wanted: queries}
	c.pending.Store(len(queries) > 0)
	return c
}

// get returns query's statement bound to tx, or nil when it is not
// prepared yet (then the next prepare call prepares it).
func (c *stmtCache) get(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	if st, ok := c.stmts.Load(query); ok {
		return tx.StmtContext(ctx, st.(*sql.Stmt))
	}
	c.want(query)
	return nil
}

func (c *stmtCache) want(query string) {
	if c.count.Load() >= stmtCacheMax {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.wanted {
		if q == query {
			return
		}
	}
	c.wanted = append(c.wanted, query)
	c.pending.Store(true)
}

// prepare prepares the wanted statements. It must be called while the
// caller holds no connection of the store's database. A statement that
// fails to prepare (its table is not there yet) is left for next time;
// its queries keep running unprepared.
func (c *stmtCache) prepare(ctx context.Context) {
	if !c.pending.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	left := c.wanted[:0]
	for _, q := range c.wanted {
		if _, ok := c.stmts.Load(q); ok {
			continue
		}
		if c.count.Load() >= stmtCacheMax {
			break
		}
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			left = append(left, q)
			continue
		}
		c.stmts.Store(q, st)
		c.count.Add(1)
	}
	c.wanted = left
	c.pending.Store(len(left) > 0 && c.count.Load() < stmtCacheMax)
}

// close closes the prepared statements; later calls prepare nothing.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.pending.Store(false)
	var errs []error
	c.stmts.Range(func(q, st any) bool {
		errs = append(errs, st.(*sql.Stmt).Close())
		c.stmts.Delete(q)
		return true
	})
	return errors.Join(errs...)
}

// txExec runs query in tx, prepared when it is cached.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.stmts.get(ctx, tx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQuery runs query in tx, prepared when it is cached.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := s.stmts.get(ctx, tx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// txQueryRow runs query in tx, prepared when it is cached.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := s.stmts.get(ctx, tx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}
