package stores

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/ident"
)

// BatchStore is implemented by stores that can run many messages in one
// transaction with a savepoint each (package batch): the inbox rows of a
// whole batch inserted by one statement, savepoints to undo one message
// without the others, the inbox rows of failed messages deleted again, and
// outbox rows inserted many at a time. It is optional and separate from
// [Store], which stays as it is for third parties; pgxstore and
// sqlitestore implement it, and storetest.Run runs its conformance
// suite.
//
// The transaction of BeginInboxMany is ended with [Store.CommitTx] or
// [Store.RollbackTx]; [Store.TransitionIfStateTx] and
// [Store.InsertOutboxTx] work in it. Implementations are safe for
// concurrent use; one transaction is used by one goroutine at a time.
type BatchStore[TTx any] interface {
	Store[TTx]

	// BeginInboxMany begins a transaction and inserts the inbox rows
	// (p.Consumer, p.Rows[i].EventID) in it as its first write, with one
	// statement for all rows (INSERT ... ON CONFLICT DO NOTHING): the
	// dedupe check is the insert under the unique constraint (docs/design.md
	// invariant 2). Rows that already existed are reported as duplicates,
	// with a payload mismatch when both hashes are set and differ; reading
	// their hashes takes a second statement only when there are
	// duplicates. A concurrent transaction holding one of the keys makes
	// the insert wait until it ends. With p.Savepoint set, the savepoint
	// is taken after the insert, in the same round trip where the store
	// can. Event ids must be distinct within p.Rows (an error otherwise);
	// no rows begins the transaction only. On error no transaction is left
	// open.
	BeginInboxMany(ctx context.Context, p *BeginInboxManyParams) (*BeginInboxManyResult[TTx], error)

	// SavepointTx sets a savepoint named name in tx. A name used again
	// shadows the earlier savepoint until it is released.
	SavepointTx(ctx context.Context, tx TTx, name string) error

	// RollbackToSavepointTx undoes everything tx did since the savepoint
	// name was set, and keeps the savepoint. It also recovers a
	// transaction that a failed statement aborted (PostgreSQL) since then.
	RollbackToSavepointTx(ctx context.Context, tx TTx, name string) error

	// ReleaseSavepointTx ends the savepoint name, keeping its changes. It
	// fails when a statement since the savepoint aborted the transaction
	// (PostgreSQL): then roll back to the savepoint.
	ReleaseSavepointTx(ctx context.Context, tx TTx, name string) error

	// DeleteInboxTx deletes the inbox rows (p.Consumer, p.EventIDs[i]) in
	// tx, with one statement: the rows of messages whose handler failed
	// after BeginInboxMany inserted them, so that their redelivery applies
	// them.
	DeleteInboxTx(ctx context.Context, tx TTx, p *DeleteInboxParams) (*DeleteInboxResult, error)

	// InsertOutboxManyTx adds outbox rows in tx with one statement (a
	// second only when some keys exist), each row validated as by
	// [Store.InsertOutboxTx]. A row whose idempotency key exists with the
	// same payload, in the table or earlier in p.Rows, is a duplicate and
	// writes nothing; the same key with another payload returns
	// storekit.IdempotencyConflict (permanent) and the statement's rows are not
	// kept: roll back (to a savepoint).
	InsertOutboxManyTx(ctx context.Context, tx TTx, p *OutboxInsertManyParams) (*OutboxInsertManyResult, error)
}

// InboxManyRow is one inbox row of [BeginInboxManyParams].
type InboxManyRow struct {
	// EventID is the producer-assigned event id. Required.
	EventID string
	// PayloadHash is the payload's digest ([PayloadHash]); may be nil.
	PayloadHash []byte
	// TraceParent is the delivery's W3C traceparent, kept with the row as
	// BeginInboxParams.TraceParent is; "" when not traced.
	TraceParent string
}

// BeginInboxManyParams are the input of [BatchStore.BeginInboxMany].
type BeginInboxManyParams struct {
	// Consumer scopes the rows (docs/design.md invariant 6). Required.
	Consumer string
	// Rows are the rows to insert; their event ids must be distinct.
	Rows []InboxManyRow
	// Savepoint, when set, names a savepoint taken right after the insert.
	Savepoint string
	// Now is the rows' received_at; zero means the store's clock.
	Now time.Time
	// Progress are the watermarks of the partitions the rows came from
	// (see [Progress]); the store writes them in the transaction with one
	// statement just before the COMMIT. Empty writes nothing.
	Progress []Progress
}

// Validate returns every problem with p at once (errors.Join), or nil.
func (p *BeginInboxManyParams) Validate() error {
	var errs []error
	if p.Consumer == "" {
		errs = append(errs, errors.New("Consumer is empty"))
	}
	seen := make(map[string]struct{}, len(p.Rows))
	for i, r := range p.Rows {
		if r.EventID == "" {
			errs = append(errs, fmt.Errorf("Rows[%d].EventID is empty", i))
			continue
		}
		if _, ok := seen[r.EventID]; ok {
			errs = append(errs, fmt.Errorf("Rows[%d].EventID %q is repeated: event ids must be distinct", i, r.EventID))
		}
		seen[r.EventID] = struct{}{}
	}
	if p.Savepoint != "" {
		errs = append(errs, ident.Valid("Savepoint", p.Savepoint))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid inbox rows: %w", err)
	}
	return nil
}

// InboxManyOutcome is what the insert did with one row of
// [BeginInboxManyParams].
type InboxManyOutcome struct {
	// Duplicate is true when the row existed (committed by an earlier
	// transaction): nothing was written.
	Duplicate bool
	// PayloadMismatch is true for a duplicate whose stored payload hash is
	// set and differs from the row's.
	PayloadMismatch bool
	// StoredHash is, for a duplicate, the payload hash the existing row
	// holds (nil when it holds none), so that further copies of the id can
	// be compared with it.
	StoredHash []byte
	// TraceParent is, for a duplicate, the traceparent the existing row
	// keeps ("" when none).
	TraceParent string
}

// BeginInboxManyResult is the output of [BatchStore.BeginInboxMany].
type BeginInboxManyResult[TTx any] struct {
	// Tx is the open transaction holding the inserted rows.
	Tx TTx
	// Rows holds one outcome per row of the params, in their order.
	Rows []InboxManyOutcome
}

// DeleteInboxParams are the input of [BatchStore.DeleteInboxTx].
type DeleteInboxParams struct {
	// Consumer scopes the rows. Required.
	Consumer string
	// EventIDs are the rows' event ids; none deletes nothing.
	EventIDs []string
}

// DeleteInboxResult is the output of [BatchStore.DeleteInboxTx].
type DeleteInboxResult struct {
	// Deleted is the number of rows deleted.
	Deleted int64
}

// OutboxInsertManyParams are the input of [BatchStore.InsertOutboxManyTx].
type OutboxInsertManyParams struct {
	// Rows are the outbox rows, each as for [Store.InsertOutboxTx].
	Rows []ackgap.OutboxEntry
}

// Validate returns every problem with the rows at once (errors.Join), or
// nil.
func (p *OutboxInsertManyParams) Validate() error {
	var errs []error
	for i := range p.Rows {
		if err := p.Rows[i].Validate(); err != nil {
			errs = append(errs, fmt.Errorf("Rows[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// OutboxInsertManyResult is the output of [BatchStore.InsertOutboxManyTx].
type OutboxInsertManyResult struct {
	// Duplicate holds, per row of the params in their order, whether the
	// row was a duplicate (nothing written for it).
	Duplicate []bool
}
