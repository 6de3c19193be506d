// Package stores defines the contract between ackgap and a database, as
// three interfaces, one per path through it, and the params and results of
// their methods. It imports no database driver.
//
//   - [Store], typed by the store's own transaction (pgx.Tx, *sql.Tx): the
//     handler path. The inbox middleware, the router and package batch
//     begin a message's transaction with its inbox row, apply guarded
//     transitions, add outbox rows and commit through it.
//   - [OutboxStore]: the outbox path. The relay (package outbox) claims due
//     rows under a lease, records their outcomes behind each row's claim
//     or hold, many rows in one statement, and is woken by stores that can
//     listen.
//   - [Operator], which includes OutboxStore: the operator path. Migrations,
//     inbox pruning (package retention), stats, event lookups and
//     repairs, for the ackgap command (cmd/ackgap) and the console.
//
// Three stores implement all three: stores/pgxstore (PostgreSQL through
// github.com/jackc/pgx/v5, handlers get a pgx.Tx), stores/sqlitestore
// (SQLite through modernc.org/sqlite, handlers get a *sql.Tx; the embedded
// default) and stores/mysqlstore (MariaDB and MySQL, *sql.Tx). A
// third-party store is a package that implements them and passes the
// conformance suite in stores/storetest:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) *storetest.Harness[*mydb.Tx] {
//			return &storetest.Harness[*mydb.Tx]{Store: newStore(t), ...}
//		})
//	}
//
// A store may pipeline (pgxstore does: the inbox insert rides with the
// handler's first statement, outbox rows and guarded transitions queued
// with QueueOutboxTx and QueueTransitionTx are sent with the next
// statement or the commit) or not; the methods are the same either way,
// and an eager store implements the pipelined ones with the storekit
// helpers (VerdictNow, QueueTransitionNow).
// storetest.Run checks it, and storetest.RunBenchmarks runs one benchmark
// workload on every store.
// The types a handler also touches (ackgap.Transition with its Guards and
// Set, ackgap.TransitionResult, ackgap.OutboxEntry) live in the root
// package ackgap, so that a handler needs one ackgap import; the contract's
// methods take them as they are. The inbox middleware calls
// TransitionIfStateTx for a transition whose outcome the handler reads
// (ackgap.PendingTransition.Result) and QueueTransitionTx for one it does
// not, and QueueOutboxTx for ackgap.AddOutbox.
//
// A capability a store lacks is an answer, not a missing interface:
// ListenOutbox of a store without notifications returns an error wrapping
// errors.ErrUnsupported, and its relays poll.
//
// Helpers a store author shares with ackgap's own stores (quoting
// identifiers, classifying a guarded UPDATE, the idempotency-conflict
// error, the plan of a multi-row outbox insert) live in stores/storekit,
// apart from the contract.
//
// Rules every implementation keeps (docs/design.md, invariants 1, 2, 7, 8):
//   - [Store.BeginInboxDeferred] inserts the inbox row as the transaction's first
//     write, under a unique constraint on (consumer, event id); the insert
//     itself is the dedupe check, never a SELECT before it.
//   - A duplicate is a result ([BeginInboxResult.Duplicate]), not an error.
//   - A guarded write puts its guard in the WHERE clause (the state guard
//     and every ackgap.Guard, values bound, identifiers quoted) and reports
//     what it changed; it never reads and then writes.
//   - Driver errors that mean the database is unreachable are translated to
//     ackgap.ErrStoreUnavailable in one place.
package stores
