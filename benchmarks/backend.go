package main

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap/router"
)

// backend is one database under test with everything the workloads need
// from it: ackgap's store behind a router, and the same SQL written by
// hand for the plain Watermill handlers and the ceiling.
type backend interface {
	// name is "postgres" or "sqlite".
	name() string
	// reset empties the inbox, the outbox and the orders table, then adds
	// one pending order per id.
	reset(ctx context.Context, orderIDs []string) error
	// counts reads what the run left in the database.
	counts(ctx context.Context) (counts, error)
	// safeRouter returns an ackgap router (router.New on the store) with
	// the billing handler (queue: the transition unread, with its rows;
	// else read with PendingTransition.Result, then the rows through
	// ackgap.AddOutbox) subscribed to topics as
	// consumer "billing"; with inboxOnly, an empty handler instead.
	safeRouter(cfg *router.Config, sub message.Subscriber, topics []string, queue, inboxOnly bool) (runner, error)
	// unsafe is the guarded UPDATE alone, in autocommit: no inbox, no
	// outbox.
	unsafe(msg *message.Message) error
	// handWritten is the safe pattern written by hand, one statement per
	// round trip: BEGIN, inbox insert, guarded UPDATE, two outbox inserts,
	// COMMIT.
	handWritten(msg *message.Message) error
	// ceiling applies ev with the same SQL as the safe workload and no
	// framework: on PostgreSQL every statement pipelined in one round
	// trip.
	ceiling(ctx context.Context, ev *event) error
	// serverCPU returns the CPU time the database server's processes
	// serving this backend used so far, and false when it cannot tell
	// (SQLite runs in this process; PostgreSQL on another machine).
	serverCPU() (time.Duration, bool)
	// facts describes the database's settings that matter here.
	facts(ctx context.Context) ([]fact, error)
	close() error
}

// runner is a router: ackgap's or Watermill's.
type runner interface {
	Run(ctx context.Context) error
	Running() chan struct{}
	Close() error
}

// counts is what a run left in the database.
type counts struct {
	// transitions is the number of applied transitions: the sum of the
	// orders' versions.
	transitions int64
	// charges and receipts count the outbox rows of each kind.
	charges, receipts int64
	// inbox counts inbox rows.
	inbox int64
}

// fact is one line of the machine facts.
type fact struct{ name, value string }

// payloadHash is the inbox row's payload hash, as the middleware computes
// it (stores.PayloadHash).
func payloadHash(payload []byte) []byte {
	h := sha256.Sum256(payload)
	return h[:]
}
