package middleware

import (
	"time"

	"github.com/ackgap/ackgap"
)

// Dispatcher carries out outbox rows right after the commit of the
// transaction that wrote them, in the process that wrote them, without a
// relay having to claim them first (outbox direct dispatch). outbox.Relay
// implements it; set it as InboxConfig.Dispatch (or batch.Config's) with
// the relay running in the same process.
//
// How a row goes: when a handler adds it (ackgap.AddOutbox, the rows of
// ackgap.ApplyTransition), the inbox asks HoldOutbox for room. With room,
// the row is written pending with attempts 0 and available_at at the
// hold's end, so no relay claims it before then; once the transaction
// committed, the row is handed over with DispatchOutbox, and the relay
// calls its effect and records the outcome by idempotency key
// (stores.OutboxStore.SettleOutboxIfClaimedOrHeld): one write per row after the
// insert instead of two (claim, then outcome), and no claim statement. If
// the process dies first, the hold lapses and any relay claims the row, as
// it would a row whose lease lapsed. Without room (or a dispatcher that is
// not running) the row is written due at once, for relays to claim as
// usual. A row added with AvailableAt set (a delayed effect) is never held.
//
// Implementations are safe for concurrent use and never block.
type Dispatcher interface {
	// HoldOutbox reserves room for one row and returns the end of its hold
	// (the row's available_at), or ok false when there is no room.
	HoldOutbox() (until time.Time, ok bool)
	// DispatchOutbox hands over rows of a committed transaction, each held
	// by HoldOutbox (AvailableAt is its hold's end), and ends released
	// other reservations that got no row (rows rolled back, transitions
	// that did not apply). Rows may be empty.
	DispatchOutbox(rows []ackgap.OutboxEntry, released int)
}

// OutboxHold collects the outbox rows of one transaction held for a
// [Dispatcher], to hand them over once the transaction committed. The
// inbox middleware keeps one per message; package batch one per batch,
// marking each message's share so that a message rolled back to its
// savepoint takes its rows out. A nil *OutboxHold holds nothing. Not safe
// for concurrent use (a transaction is not).
type OutboxHold struct {
	d        Dispatcher
	reserved int
	rows     []heldRow
}

// heldRow is a held row and, for a row of a transition, whether the
// transition applied (nil: the row is written whenever the transaction
// commits).
type heldRow struct {
	row     ackgap.OutboxEntry
	applied *bool
}

// NewOutboxHold returns an OutboxHold on d, or nil when d is nil.
func NewOutboxHold(d Dispatcher) *OutboxHold {
	if d == nil {
		return nil
	}
	return &OutboxHold{d: d}
}

// hold sets row's AvailableAt to a hold's end and keeps a copy, when row
// has none and the dispatcher has room; applied, when not nil, is read at
// Dispatch. It reports whether row is held.
func (h *OutboxHold) hold(row *ackgap.OutboxEntry, applied *bool) bool {
	if h == nil || !row.AvailableAt.IsZero() {
		return false
	}
	until, ok := h.d.HoldOutbox()
	if !ok {
		return false
	}
	h.reserved++
	row.AvailableAt = until.Truncate(time.Microsecond) // as stored
	h.rows = append(h.rows, heldRow{row: *row, applied: applied})
	return true
}

// Mark returns a mark for [OutboxHold.RollbackTo]: take it where the
// transaction takes a savepoint.
func (h *OutboxHold) Mark() int {
	if h == nil {
		return 0
	}
	return len(h.rows)
}

// RollbackTo forgets the rows held since mark, as rolling the transaction
// back to the savepoint taken with the mark undoes their inserts; their
// reservations end at Dispatch or Release.
func (h *OutboxHold) RollbackTo(mark int) {
	if h != nil && mark < len(h.rows) {
		h.rows = h.rows[:mark]
	}
}

// Dispatch hands the held rows to the dispatcher after the transaction
// committed: every row, except those of transitions that did not apply
// (or whose outcome the store did not report: they wait for their hold to
// lapse). Call it once, after a commit that returned nil; then the hold
// is empty.
func (h *OutboxHold) Dispatch() {
	if h == nil || h.reserved == 0 {
		return
	}
	rows := make([]ackgap.OutboxEntry, 0, len(h.rows))
	for _, r := range h.rows {
		if r.applied == nil || *r.applied {
			rows = append(rows, r.row)
		}
	}
	h.d.DispatchOutbox(rows, h.reserved-len(rows))
	h.reserved, h.rows = 0, nil
}

// Release ends every reservation without handing a row over: call it when
// the transaction rolled back, or its commit failed (its rows, if the
// commit happened after all, wait for their hold to lapse). Then the hold
// is empty.
func (h *OutboxHold) Release() {
	if h == nil || h.reserved == 0 {
		return
	}
	h.d.DispatchOutbox(nil, h.reserved)
	h.reserved, h.rows = 0, nil
}
