// Package pgxstore is the PostgreSQL store of ackgap, on a
// github.com/jackc/pgx/v5 pgxpool.Pool. Handlers receive a pgx.Tx.
//
//	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:5432/app")
//	store, err := pgxstore.New(pool, nil) // tables ackgap_inbox, ackgap_outbox
//	_, err = store.Migrate(ctx, &stores.MigrateParams{})
//
// Tables live in Config.Schema (default: the connection's search_path) and
// are named with Config.TablePrefix (default "ackgap_"). Migrate applies
// the embedded, numbered migrations under a transaction-scoped advisory
// lock, so many instances can start at once; [Migrations] returns the same
// SQL, rendered with your names, for goose, atlas or a DBA.
//
// Round trips are the cost on PostgreSQL, so the store saves them. The
// inbox middleware uses BeginInboxDeferred: the transaction's BEGIN and
// inbox insert are held back and sent with its first statement (an Exec
// with arguments, such as a guarded transition's UPDATE, rides behind
// them in the same round trip). Outbox rows added with QueueOutboxTx
// (ackgap.AddOutbox) are held back too and sent with the next
// statement or with COMMIT, pipelined, followed by a pg_notify that wakes
// the outbox relays (after the COMMIT, in a transaction of its own: see
// migration 003). Notifications are coalesced: at most one per
// Config.NotifyInterval (10 ms) per Store, so a relay learns of a row at
// most that long after its commit; later commits of the interval leave the
// notify out. A message whose handler applies one guarded transition
// and queues its outbox rows takes two round trips: BEGIN + inbox insert +
// UPDATE; the rows + COMMIT + notify. A
// duplicate takes two as well: its UPDATE is rolled back with the
// transaction and fails with ackgap.ErrDuplicate. A queued row whose
// idempotency key exists with another payload fails the commit with
// ackgap.ErrIdempotencyConflict and rolls everything back.
//
// The inbox insert is INSERT ... ON CONFLICT DO NOTHING under the primary
// key (consumer, event_id): a concurrent second copy waits for the first
// transaction and then finds the row, or takes over the key if the first
// rolled back. Connection failures (SQLSTATE class 08, 57P01-57P03, 53300,
// a closed pool or connection) are returned wrapping
// ackgap.ErrStoreUnavailable.
package pgxstore
