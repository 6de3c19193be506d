// Package outbox carries out the external effects that handlers record as
// outbox rows (ackgap.AddOutbox): each exactly once as far as the
// other side can tell, because every call carries the row's idempotency
// key, derived from the business event (docs/design.md invariant 7).
//
//	relay, err := outbox.New(store, &outbox.Config{Effects: map[string]outbox.Effect{
//		"charge":        outbox.HTTP(client, "https://payments.example/charges"),
//		"order.charged": outbox.Publish(publisher, "orders.charged"),
//	}})
//	if err != nil { ... }
//	go relay.Run(ctx) // until ctx ends; run it on every instance
//
// For each row, a [Relay]:
//
//  1. claims it, with others, in one short statement (PostgreSQL: FOR
//     UPDATE SKIP LOCKED; SQLite: BEGIN IMMEDIATE), setting a lease
//     (Config.Lease) and a new claim token, and counting the attempt;
//  2. calls the effect registered for its kind, outside any transaction,
//     with the row (idempotency key, payload, headers) and a timeout
//     (Config.EffectTimeout, shorter than the lease);
//  3. records the outcome, guarded by the claim token, in one short
//     statement shared with the other rows that finished meanwhile
//     (stores.OutboxStore.SettleOutboxIfClaimedOrHeld): done; retry later (exponential backoff from
//     Config.RetryInitialInterval, doubling, capped at
//     Config.RetryMaxInterval, ±20% jitter; at least what a [RetryAfter]
//     error asks); or dead (an ackgap.Permanent error, or
//     Config.MaxAttempts attempts) with the last error kept.
//
// No database connection is held while an effect runs: a slow provider
// does not starve the consumers of connections.
//
// # Crashes and duplicates
//
// A relay that dies between the call and the record leaves its row
// claimed; once the lease lapses another relay (or the restarted one)
// claims it and calls the effect again with the same idempotency key, so
// the other side must dedupe on it: payment APIs do (Idempotency-Key, see
// [HTTP]); a Watermill consumer behind ackgap's inbox does (the [Publish]
// effect sets the event id to the key). When recording fails after the
// other side confirmed, the same happens one lease later: the lease is the
// backoff, there is no tight loop. A relay whose lease lapsed and whose
// row was claimed again records nothing (OutcomeClaimLost). A row claimed
// more than MaxAttempts times without an outcome (a poison row that
// crashes the relay) is marked dead without calling its effect.
//
// # Several relays
//
// Run a relay on every instance: claims never overlap, and a relay that
// stops or dies only delays its rows by a lease. On PostgreSQL a relay
// LISTENs for the pg_notify that pgxstore sends after the commit of a
// transaction of the inbox that added outbox rows (coalesced: at most one
// per pgxstore Config.NotifyInterval, 10 ms), and claims at once;
// polling (Config.PollInterval) is the fallback, and finds rows written by
// other code (which can call pgxstore's NotifyOutbox after its commit).
// SQLite is polled.
//
// The notification rides in the COMMIT's round trip but runs after it, in
// a transaction of its own that writes nothing. Until migration 003 it was
// an AFTER INSERT trigger, inside the writing transaction: NOTIFY takes a
// database-wide lock at commit and holds it through the commit's WAL
// flush, so every transaction that added outbox rows committed one at a
// time (2,000-3,500 commits/s at 16 connections on a 2-CPU machine, 8,000
// after the change). Measured commit-to-effect latency with an idle relay:
// about 1 ms woken by the notification, about half the poll interval
// polling.
//
// # What it costs, and why
//
// The database writes of one billing event (one state change, two effects)
// end to end on PostgreSQL:
//
//   - the consumer's transaction: the inbox row, the guarded UPDATE and the
//     two outbox rows (one INSERT for both), one commit; with
//     ackgap.ApplyTransition unread, all of it is one statement sent with
//     the COMMIT, one round trip (a handler statement of its own first
//     costs one more);
//   - the claim: each outbox row rewritten once (state, attempts, claim
//     token, lease), in one statement and commit per claim of at least half
//     of Config.Concurrency rows (50 by default) — none with direct
//     dispatch (below), where the row is written held instead;
//   - the outcome: each row rewritten once more (done), in one statement and
//     commit per group of rows that finished together;
//   - the wake-up: at most one pg_notify per pgxstore Config.NotifyInterval
//     (10 ms) per process, not one per commit, and none after a commit
//     whose rows are all due later (held for dispatch, or delayed);
//   - later, out of the hot path: pruning deletes done rows after
//     Config.DoneRetention, 1,000 per statement.
//
// So an outbox row is written three times claimed (insert, claim, done)
// and twice dispatched (insert, done), and a claim of 50 rows costs two
// commits instead of 51. The two rewrites are
// what safety needs: the claim is the lease, written before the call, so a
// relay that dies mid-call loses the row to the next claimer after
// Config.Lease without any transaction or lock held across the call
// (design.md invariant 7), and it counts the attempt, so a row that kills
// its relay every time is stopped after Config.MaxAttempts; the done write
// is made only after the effect returned, and the done row keeps its
// idempotency key for Config.DoneRetention, so a second insert of the same
// effect is recognised. Each rewrite leaves a dead row version and index
// entries behind until VACUUM; pgxstore's migration 004 has autovacuum
// visit the outbox after 1 % of it changed (benchmarks/RESULTS.md: a relay
// drained 100,000 rows beside 1,000,000 done ones at 6,000-15,000 rows/s on
// a shared 2-core machine).
//
// # Direct dispatch
//
// A relay running in the process that writes the rows can take them
// straight from the commit: set it as the inbox's Dispatch
// (middleware.InboxConfig.Dispatch, router.Config, batch.Config). Each row
// a handler adds is then written held: pending, attempts 0, due at the end
// of a hold of Config.Lease, so no relay claims it meanwhile. Right after
// the commit the inbox hands the rows to the relay ([Relay.DispatchOutbox]),
// which calls their effects ahead of claimed rows and records the outcomes
// by idempotency key, guarded by the hold (attempts still 0, available_at
// the hold's end): stores.OutboxStore.SettleOutboxIfClaimedOrHeld. That saves
// the claim: one write per row instead of two after the insert, and no
// claim statement or wake-up before the call (relay PostgreSQL CPU per
// event in the Kafka batched benchmark: 95 µs claimed, 48 µs dispatched).
// What it costs: a process that dies after its commit leaves its rows to
// the other relays for up to a Lease (the same wait as a claimed row whose
// relay died); a relay that stops releases the rows handed to it whose
// effect had not started, and those whose transaction commits while it
// stops, within Config.StopTimeout (due at once, for any relay to claim,
// one attempt counted, last error "released unstarted by a stopping
// relay"), and only
// if that release fails do they wait for their hold; a row whose insert was a duplicate (its key already stored
// by another event) may be called once more with its key, which the other
// side dedupes, and its outcome is not recorded (the stored row keeps its
// own). Rows beyond Config.DispatchLimit, and every row while Run is not
// running, are written due at once and claimed as before; a row that
// waited so long that its hold would end before its call could finish is
// left to the claimers. Rows of a message rolled back (or of a savepoint
// of package batch), and rows of a guarded transition that did not apply,
// are never handed over.
//
// Operators see a row waiting for its hold as held: pending, attempts 0,
// available_at after now (stores.OutboxRow.Held), told apart from a row
// waiting out a retry backoff, which has attempts 1 or more.
// stores.StatsResult (Held, HeldUntil, Backoff), stores.OutboxStatsResult
// (Held, Backoff), "ackgap status", "ackgap doctor", "ackgap outbox list
// --state held" and the console count and list them. A row a handler added
// with a later AvailableAt (a delayed effect) has the same columns and
// counts as held too: nothing stored tells the two apart, and both are
// rows never tried and not due yet. After a crash, held rows mean "due at
// HeldUntil", not "caught up": if no relay claims them once due, the
// oldest due row's age shows it.
//
// Recording rows together means a row is recorded once the recording
// before it returns, not at once (one statement's time, about a
// millisecond); until then it is claimed, and a crash repeats its call
// with the same idempotency key, as it would one statement later. The
// coalesced wake-up means a new row waits up to NotifyInterval before a
// relay claims it. Config.Concurrency (100) sets how many calls are in
// flight: with a provider that answers in 20 ms the relay carries out up to
// 5,000 rows/s; it costs a goroutine and, with [HTTP], a connection each.
// [Publish] gives up on a publisher that blocks past Config.EffectTimeout
// and retries under the same event id, so the consumer's inbox may see a
// late copy and skip it.
//
// # Order
//
// The relay guarantees no order between rows. Claims take the oldest due
// rows first (available_at, then id), so a backlog drains roughly in
// commit order, but effects run concurrently (Config.Concurrency), several
// relays interleave, and a row that fails is retried later while younger
// rows go ahead: one failing row never blocks the others. An effect whose
// order matters must carry what orders it (a version, a sequence) so the
// receiver can apply it with a guarded transition and skip stale ones.
//
// # Operations
//
// [Relay.Stats] (backlog, of it the rows held and backing off, dead
// rows, age of the oldest row not carried out), [Relay.List] (pending or dead rows with their last error),
// [Relay.Redrive] (dead rows back to pending, attempts reset) and
// [Relay.PruneDone] (delete rows done longer than Config.DoneRetention
// ago; Run does it every Config.PruneInterval). The store methods behind
// them are in stores.OutboxStore.
package outbox
