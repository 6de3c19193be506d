// Package sqlitestore is the SQLite store of ackgap and its embedded
// default, on modernc.org/sqlite (pure Go, no cgo). Handlers receive a
// *sql.Tx.
//
//	store, err := sqlitestore.Open(ctx, "/var/lib/app/ackgap.db", nil)
//	defer store.Close()
//	_, err = store.Migrate(ctx, &stores.MigrateParams{})
//
// Open sets the pragmas SQLite needs for this job: WAL journal,
// synchronous NORMAL, a busy timeout (Config.BusyTimeout, default 5 s), and
// BEGIN IMMEDIATE transactions, so a transaction takes the write lock when
// it starts and concurrent writers queue instead of failing with
// SQLITE_BUSY halfway (SQLite serialises writers: one at a time). SQLite has
// no schemas here: tables are named with Config.TablePrefix only. Times are
// stored as Unix microseconds.
//
// The store's statements (inbox, outbox, guarded transitions) are prepared
// once per connection and kept, so SQLite does not parse them again for
// every message; Close closes them.
//
// Busy-past-timeout, I/O and closed-database errors are returned wrapping
// ackgap.ErrStoreUnavailable.
package sqlitestore
