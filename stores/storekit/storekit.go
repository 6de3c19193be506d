// Package storekit holds the helpers a store author shares with ackgap's
// own stores (pgxstore, sqlitestore): quoting identifiers, classifying a
// guarded UPDATE or a driver error, the idempotency-conflict error, and the plan of a
// multi-row outbox insert. They are kept apart from package stores, the
// contract, so that the contract holds only what a store implements and
// what its callers pass and get back.
package storekit

import (
	"context"
	"fmt"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/ident"
	"github.com/ackgap/ackgap/stores"
)

// QuoteIdentifier quotes name as an SQL identifier in the standard way
// (ISO/IEC 9075, used by PostgreSQL and SQLite): wrapped in double quotes,
// with each double quote doubled. Validate names first with
// [ValidIdentifier].
func QuoteIdentifier(name string) string { return ident.Quote(name) }

// ValidIdentifier returns an error naming what if name is empty, longer
// than 63 bytes (PostgreSQL's NAMEDATALEN-1) or holds a NUL byte: the rule
// the params of package stores are validated with.
func ValidIdentifier(what, name string) error { return ident.Valid(what, name) }

// OutcomeOf classifies a guarded UPDATE: applied when it changed a row;
// otherwise already applied when the row is in state to (to not ""),
// refused when it is in another state, fails a guard, or is missing (found
// false).
func OutcomeOf(applied, found bool, current, to string) ackgap.TransitionOutcome {
	switch {
	case applied:
		return ackgap.TransitionApplied
	case found && to != "" && current == to:
		return ackgap.TransitionAlreadyApplied
	default:
		return ackgap.TransitionRefused
	}
}

// AppliedFrom returns the Previous state of an applied transition: the
// only From state, or "" when From has several.
func AppliedFrom(from []string) string {
	if len(from) == 1 {
		return from[0]
	}
	return ""
}

// IdempotencyConflict returns the error an outbox insert returns when key
// exists with another payload (stores.Store.QueueOutboxTx,
// InsertOutboxManyTx): permanent (reason
// ackgap.ReasonIdempotencyConflict), wrapping ackgap.ErrIdempotencyConflict.
func IdempotencyConflict(key string) error {
	return ackgap.Permanent(ackgap.ReasonIdempotencyConflict, fmt.Errorf("%w: key %q", ackgap.ErrIdempotencyConflict, key))
}

// OutboxManyPlan is how a store carries out
// [stores.Store.InsertOutboxManyTx], shared by the SQL stores: the rows to
// send (the first of each idempotency key) and what is known before
// sending them. Build it with [PlanOutboxMany]; finish with Settle.
type OutboxManyPlan struct {
	// Rows are the indexes into the params' Rows of the rows to insert:
	// the first row of each idempotency key, in their order.
	Rows []int
	// Hashes are the payload hashes (stores.PayloadHash) of Rows.
	Hashes [][]byte
	// Duplicate holds, per row of the params, true for a row whose key an
	// earlier row of the params carries with the same payload.
	Duplicate []bool
}

// PlanOutboxMany validates p and returns its plan. A key repeated in p
// with another payload returns [IdempotencyConflict] (permanent).
func PlanOutboxMany(p *stores.OutboxInsertManyParams) (*OutboxManyPlan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	pl := &OutboxManyPlan{Duplicate: make([]bool, len(p.Rows))}
	first := make(map[string][]byte, len(p.Rows))
	for i := range p.Rows {
		key, hash := p.Rows[i].IdempotencyKey, stores.PayloadHash(p.Rows[i].Payload)
		if h, ok := first[key]; ok {
			if string(h) != string(hash) {
				return nil, IdempotencyConflict(key)
			}
			pl.Duplicate[i] = true
			continue
		}
		first[key] = hash
		pl.Rows = append(pl.Rows, i)
		pl.Hashes = append(pl.Hashes, hash)
	}
	return pl, nil
}

// Settle returns the result once the insert ran: inserted holds the keys
// the insert wrote, stored the payload hashes the store holds for the
// others. A key held with another payload returns [IdempotencyConflict].
func (pl *OutboxManyPlan) Settle(p *stores.OutboxInsertManyParams, inserted map[string]struct{}, stored map[string][]byte) (*stores.OutboxInsertManyResult, error) {
	res := &stores.OutboxInsertManyResult{Duplicate: pl.Duplicate}
	for j, i := range pl.Rows {
		key := p.Rows[i].IdempotencyKey
		if _, ok := inserted[key]; ok {
			continue
		}
		if string(stored[key]) != string(pl.Hashes[j]) {
			return nil, IdempotencyConflict(key)
		}
		res.Duplicate[i] = true
	}
	return res, nil
}

// VerdictNow is [stores.Store.InboxVerdictTx] for a store whose
// BeginInboxDeferred resolves the inbox insert at once: tx is not a
// duplicate, or BeginInboxDeferred would have said so.
func VerdictNow[TTx any](tx TTx) *stores.BeginInboxResult[TTx] {
	return &stores.BeginInboxResult[TTx]{Tx: tx}
}

// QueueTransitionNow is [stores.Store.QueueTransitionTx] for a store that
// does not pipeline: it applies p.Transition at once with
// s.TransitionIfStateTx and, only if it applied, inserts p.Outbox with
// one s.InsertOutboxManyTx. A refused transition returns TransitionResult.Err
// (permanent, ackgap.ErrTransitionRefused); one already applied writes
// nothing and returns nil. It calls p.Ran, when set, once the transition
// ran and its rows (if it applied) were inserted.
func QueueTransitionNow[TTx any](ctx context.Context, s stores.Store[TTx], tx TTx, p *stores.QueueTransitionParams) error {
	res, err := s.TransitionIfStateTx(ctx, tx, &p.Transition)
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return err
	}
	if res.Applied() && len(p.Outbox) > 0 {
		if _, err := s.InsertOutboxManyTx(ctx, tx, &stores.OutboxInsertManyParams{Rows: p.Outbox}); err != nil {
			return err
		}
	}
	if p.Ran != nil {
		p.Ran(res.Applied())
	}
	return nil
}

// SettleByGuard is [stores.OutboxStore.SettleOutboxIfClaimedOrHeld] for a
// store with one statement for claimed rows and one for held rows: it
// validates p, calls claimed with the claimed rows of p and held with the
// held ones (each only when there are some, with p.Now, the rows in p's
// order), and returns their results merged in p's order, with the ids of
// the claimed rows written filled in. claimed must fill the result's
// Changed; held fills Changed and IDs. An error of claimed is returned
// before held runs.
func SettleByGuard(ctx context.Context, p *stores.OutboxSettleParams,
	claimed, held func(ctx context.Context, p *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error)) (*stores.OutboxSettleResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	n := len(p.Rows)
	res := &stores.OutboxSettleResult{Changed: make([]bool, n), IDs: make([]int64, n)}
	var byClaim, byHold []int
	for i := range p.Rows {
		if p.Rows[i].Held() {
			byHold = append(byHold, i)
		} else {
			byClaim = append(byClaim, i)
		}
	}
	for _, part := range []struct {
		at     []int
		settle func(context.Context, *stores.OutboxSettleParams) (*stores.OutboxSettleResult, error)
	}{{byClaim, claimed}, {byHold, held}} {
		if len(part.at) == 0 {
			continue
		}
		sub := &stores.OutboxSettleParams{Rows: make([]stores.OutboxSettlement, len(part.at)), Now: p.Now}
		for j, i := range part.at {
			sub.Rows[j] = p.Rows[i]
		}
		got, err := part.settle(ctx, sub)
		if err != nil {
			return nil, err
		}
		for j, i := range part.at {
			res.Changed[i] = got.Changed[j]
			switch {
			case !got.Changed[j]:
			case got.IDs != nil:
				res.IDs[i] = got.IDs[j]
			default:
				res.IDs[i] = p.Rows[i].ID
			}
		}
	}
	return res, nil
}
