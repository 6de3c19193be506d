package stores

import (
	"errors"
	"fmt"
	"time"
)

// OutboxSettlement is the outcome of one row, an element of
// [OutboxSettleParams.Rows]. It names the row by its guard, one of two:
//
//   - a claim (ClaimOutbox): ID and ClaimToken; the row is changed only if
//     it is still claimed under ClaimToken;
//   - a hold (a row carried out by direct dispatch right after its commit,
//     without a claim): IdempotencyKey and HeldUntil, ClaimToken empty; the
//     row is changed only if it is still pending, never tried (attempts 0)
//     and due at HeldUntil.
type OutboxSettlement struct {
	// ID is a claimed row's id (OutboxClaim.ID); ignored for a held row.
	ID int64
	// ClaimToken is the claim's token (OutboxClaim.Token); empty for a held
	// row.
	ClaimToken string
	// IdempotencyKey finds a held row; ignored for a claimed row.
	IdempotencyKey string
	// HeldUntil is the end of a held row's hold: the available_at it was
	// inserted with (ackgap.OutboxEntry.AvailableAt), compared to the
	// microsecond. Zero for a claimed row.
	HeldUntil time.Time
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

// Held reports whether s names a held row (no ClaimToken) rather than a
// claimed one.
func (s *OutboxSettlement) Held() bool { return s.ClaimToken == "" }

// OutboxSettleParams are the input of
// [OutboxStore.SettleOutboxIfClaimedOrHeld].
type OutboxSettleParams struct {
	// Rows are the outcomes to record, at most OutboxClaimLimitMax (1000),
	// each claimed ID and each held key at most once. Empty records
	// nothing.
	Rows []OutboxSettlement
	// Now is done_at of done rows and the time retry delays count from;
	// zero means the store's clock.
	Now time.Time
}

// Validate returns every problem with p at once (errors.Join), or nil: a
// row with both guards or neither, a held row without its key or hold, a
// state other than done, pending or dead, a negative delay, an id or key
// given twice, too many rows.
func (p *OutboxSettleParams) Validate() error {
	var errs []error
	if len(p.Rows) > OutboxClaimLimitMax {
		errs = append(errs, fmt.Errorf("Rows has %d rows, at most %d", len(p.Rows), OutboxClaimLimitMax))
	}
	ids := make(map[int64]bool, len(p.Rows))
	keys := make(map[string]bool, len(p.Rows))
	for i := range p.Rows {
		r := &p.Rows[i]
		var row string
		switch {
		case !r.Held():
			row = fmt.Sprintf("Rows[%d] (id %d)", i, r.ID)
			if !r.HeldUntil.IsZero() {
				errs = append(errs, fmt.Errorf("%s: ClaimToken and HeldUntil are both set: a row is settled by its claim or by its hold", row))
			}
			if ids[r.ID] {
				errs = append(errs, fmt.Errorf("Rows[%d]: id %d appears twice", i, r.ID))
			}
			ids[r.ID] = true
		case r.HeldUntil.IsZero():
			row = fmt.Sprintf("Rows[%d] (id %d)", i, r.ID)
			errs = append(errs, fmt.Errorf("%s: ClaimToken is empty and HeldUntil is zero: set ClaimToken for a claimed row, IdempotencyKey and HeldUntil for a held one", row))
			if r.IdempotencyKey == "" && r.ID == 0 {
				errs = append(errs, fmt.Errorf("%s: IdempotencyKey is empty", row))
			}
			if r.ID != 0 {
				if ids[r.ID] {
					errs = append(errs, fmt.Errorf("Rows[%d]: id %d appears twice", i, r.ID))
				}
				ids[r.ID] = true
			}
		default:
			row = fmt.Sprintf("Rows[%d] (key %q)", i, r.IdempotencyKey)
			if r.IdempotencyKey == "" {
				errs = append(errs, fmt.Errorf("Rows[%d]: IdempotencyKey is empty", i))
			}
			if keys[r.IdempotencyKey] {
				errs = append(errs, fmt.Errorf("Rows[%d]: key %q appears twice", i, r.IdempotencyKey))
			}
			keys[r.IdempotencyKey] = true
		}
		switch r.State {
		case OutboxDone, OutboxPending, OutboxDead:
		default:
			errs = append(errs, fmt.Errorf("%s: State is %q, must be done, pending or dead", row, r.State))
		}
		if r.Delay < 0 {
			errs = append(errs, fmt.Errorf("%s: Delay is %s, must not be negative", row, r.Delay))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid outbox settle: %w", err)
	}
	return nil
}

// OutboxSettleResult is the output of
// [OutboxStore.SettleOutboxIfClaimedOrHeld].
type OutboxSettleResult struct {
	// Changed has one entry per element of OutboxSettleParams.Rows, in the
	// same order: true when that row still passed its guard (claimed
	// under its token, or still held as written) and now has its new
	// state, false when its guard failed and nothing was written to it.
	Changed []bool
	// IDs has one entry per element of Rows: the id of the row written, 0
	// where Changed is false. A row handed over by direct dispatch is
	// known to the relay by its idempotency key only; this is how its id
	// reaches the relay's logs and reports.
	IDs []int64
}
