package stores

import (
	"errors"
	"fmt"
	"time"
)

// OutboxSettlement is the outcome of one claimed row, an element of
// [OutboxSettleManyParams.Rows].
type OutboxSettlement struct {
	// ID is the claimed row's id (OutboxClaim.ID). Required.
	ID int64
	// ClaimToken is the claim's token (OutboxClaim.Token). Required.
	ClaimToken string
	// State is the row's new state: OutboxDone, OutboxPending (a retry) or
	// OutboxDead. Required.
	State OutboxState
	// Delay is, for OutboxPending, how long after now the row is due
	// again; 0 means at once. Not negative; ignored for other states.
	// Stored with microsecond precision.
	Delay time.Duration
	// LastError is kept on the row for OutboxPending and OutboxDead;
	// ignored for OutboxDone (the row keeps its last error).
	LastError string
}

// OutboxSettleManyParams are the input of
// [OutboxStore.SettleOutboxManyIfClaimed].
type OutboxSettleManyParams struct {
	// Rows are the outcomes to record, at most OutboxClaimLimitMax (1000),
	// each ID at most once. Empty records nothing.
	Rows []OutboxSettlement
	// Now is done_at of done rows and the time retry delays count from;
	// zero means the store's clock.
	Now time.Time
}

// Validate returns every problem with p at once (errors.Join), or nil.
func (p *OutboxSettleManyParams) Validate() error {
	var errs []error
	if len(p.Rows) > OutboxClaimLimitMax {
		errs = append(errs, fmt.Errorf("Rows has %d rows, at most %d", len(p.Rows), OutboxClaimLimitMax))
	}
	seen := make(map[int64]bool, len(p.Rows))
	for i, r := range p.Rows {
		if r.ClaimToken == "" {
			errs = append(errs, fmt.Errorf("Rows[%d] (id %d): ClaimToken is empty", i, r.ID))
		}
		errs = append(errs, outcomeErrors(fmt.Sprintf("Rows[%d] (id %d)", i, r.ID), r.State, r.Delay)...)
		if seen[r.ID] {
			errs = append(errs, fmt.Errorf("Rows[%d]: id %d appears twice", i, r.ID))
		}
		seen[r.ID] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid outbox settle: %w", err)
	}
	return nil
}

// OutboxSettleManyResult is the output of
// [OutboxStore.SettleOutboxManyIfClaimed].
type OutboxSettleManyResult struct {
	// Changed has one entry per element of OutboxSettleManyParams.Rows, in
	// the same order: true when that row was still claimed under its token
	// and now has its new state, false when its claim was lost and nothing
	// was written to it.
	Changed []bool
	// IDs has, from SettleOutboxManyIfHeld, one entry per element of
	// Rows: the id of the row written (0 where Changed is false). A row
	// handed over by direct dispatch is known to the relay by its
	// idempotency key only; this is how its id reaches the relay's logs
	// and reports; storetest checks it. Nil from
	// SettleOutboxManyIfClaimed (the caller has the ids).
	IDs []int64
}

// OutboxHeldSettlement is the outcome of one row carried out by direct
// dispatch, an element of [OutboxSettleHeldParams.Rows].
type OutboxHeldSettlement struct {
	// IdempotencyKey is the row's key. Required.
	IdempotencyKey string
	// HeldUntil is the end of the row's hold: the available_at it was
	// inserted with (ackgap.OutboxEntry.AvailableAt). Required; compared
	// to the microsecond.
	HeldUntil time.Time
	// State is the row's new state: OutboxDone, OutboxPending (a retry) or
	// OutboxDead. Required.
	State OutboxState
	// Delay is, for OutboxPending, how long after now the row is due
	// again; 0 means at once. Not negative; ignored for other states.
	Delay time.Duration
	// LastError is kept on the row for OutboxPending and OutboxDead;
	// ignored for OutboxDone.
	LastError string
}

// OutboxSettleHeldParams are the input of
// [OutboxStore.SettleOutboxManyIfHeld].
type OutboxSettleHeldParams struct {
	// Rows are the outcomes to record, at most OutboxClaimLimitMax (1000),
	// each key at most once. Empty records nothing.
	Rows []OutboxHeldSettlement
	// Now is done_at of done rows and the time retry delays count from;
	// zero means the store's clock.
	Now time.Time
}

// Validate returns every problem with p at once (errors.Join), or nil.
func (p *OutboxSettleHeldParams) Validate() error {
	var errs []error
	if len(p.Rows) > OutboxClaimLimitMax {
		errs = append(errs, fmt.Errorf("Rows has %d rows, at most %d", len(p.Rows), OutboxClaimLimitMax))
	}
	seen := make(map[string]bool, len(p.Rows))
	for i, r := range p.Rows {
		if r.IdempotencyKey == "" {
			errs = append(errs, fmt.Errorf("Rows[%d]: IdempotencyKey is empty", i))
		}
		if r.HeldUntil.IsZero() {
			errs = append(errs, fmt.Errorf("Rows[%d] (key %q): HeldUntil is zero", i, r.IdempotencyKey))
		}
		errs = append(errs, outcomeErrors(fmt.Sprintf("Rows[%d] (key %q)", i, r.IdempotencyKey), r.State, r.Delay)...)
		if seen[r.IdempotencyKey] {
			errs = append(errs, fmt.Errorf("Rows[%d]: key %q appears twice", i, r.IdempotencyKey))
		}
		seen[r.IdempotencyKey] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid outbox settle: %w", err)
	}
	return nil
}

// outcomeErrors checks the outcome of one row of a settle, named by row:
// its state (done, pending or dead) and its delay (not negative).
func outcomeErrors(row string, state OutboxState, delay time.Duration) []error {
	var errs []error
	switch state {
	case OutboxDone, OutboxPending, OutboxDead:
	default:
		errs = append(errs, fmt.Errorf("%s: State is %q, must be done, pending or dead", row, state))
	}
	if delay < 0 {
		errs = append(errs, fmt.Errorf("%s: Delay is %s, must not be negative", row, delay))
	}
	return errs
}
