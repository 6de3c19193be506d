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
// Round trips are the cost on PostgreSQL, so the store saves them:
// BeginInbox sends BEGIN and the inbox insert in one round trip, and the
// transaction it returns holds outbox rows added with QueueOutboxTx
// (middleware.QueueOutbox) and sends them with its next statement or with
// COMMIT, pipelined. A message whose handler applies one guarded transition
// and queues its outbox rows takes three round trips: BEGIN + inbox
// insert; the UPDATE; the rows + COMMIT (five with InsertOutboxTx). A
// queued row whose idempotency key exists with another payload fails the
// commit with ackgap.ErrIdempotencyConflict and rolls everything back.
//
// The inbox insert is INSERT ... ON CONFLICT DO NOTHING under the primary
// key (consumer, event_id): a concurrent second copy waits for the first
// transaction and then finds the row, or takes over the key if the first
// rolled back. Connection failures (SQLSTATE class 08, 57P01-57P03, 53300,
// a closed pool or connection) are returned wrapping
// ackgap.ErrStoreUnavailable.
package pgxstore
