package stores

import (
	"errors"
	"fmt"
	"time"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/ident"
)

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

// BeginInboxManyParams are the input of [Store.BeginInboxMany].
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

// BeginInboxManyResult is the output of [Store.BeginInboxMany].
type BeginInboxManyResult[TTx any] struct {
	// Tx is the open transaction holding the inserted rows.
	Tx TTx
	// Rows holds one outcome per row of the params, in their order.
	Rows []InboxManyOutcome
}

// DeleteInboxParams are the input of [Store.DeleteInboxTx].
type DeleteInboxParams struct {
	// Consumer scopes the rows. Required.
	Consumer string
	// EventIDs are the rows' event ids; none deletes nothing.
	EventIDs []string
}

// DeleteInboxResult is the output of [Store.DeleteInboxTx].
type DeleteInboxResult struct {
	// Deleted is the number of rows deleted.
	Deleted int64
}

// OutboxInsertManyParams are the input of [Store.InsertOutboxManyTx].
type OutboxInsertManyParams struct {
	// Rows are the outbox rows, each as for [Store.QueueOutboxTx].
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

// OutboxInsertManyResult is the output of [Store.InsertOutboxManyTx].
type OutboxInsertManyResult struct {
	// Duplicate holds, per row of the params in their order, whether the
	// row was a duplicate (nothing written for it).
	Duplicate []bool
}
