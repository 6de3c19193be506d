package outbox

import (
	"context"
	"fmt"

	"github.com/ackgap/ackgap/stores"
)

// Stats returns the outbox's backlog (pending and claimed rows; of the
// pending, those held for direct dispatch or delayed and those waiting out
// a retry backoff, at the store's clock), its dead rows and the created_at
// of its oldest row not yet carried out, over every kind: the numbers to
// export as metrics and alert on (see
// stores.OutboxStatsResult.OldestPendingAge).
func (r *Relay) Stats(ctx context.Context) (*stores.OutboxStatsResult, error) {
	res, err := r.store.OutboxStats(ctx, &stores.OutboxStatsParams{})
	if err != nil {
		return nil, fmt.Errorf("outbox: stats: %w", err)
	}
	return res, nil
}

// List returns up to limit rows in state (stores.OutboxPending,
// OutboxDead, ...; "" for every state), ordered by id; limit 0 means
// stores.OutboxListLimitDefault (1000). Dead rows carry their last error.
func (r *Relay) List(ctx context.Context, state stores.OutboxState, limit int) ([]stores.OutboxRow, error) {
	res, err := r.store.ListOutbox(ctx, &stores.OutboxListParams{State: state, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("outbox: list: %w", err)
	}
	return res.Rows, nil
}

// Redrive moves dead rows back to pending, due now, with their attempts
// reset, and returns how many it moved: the rows of ids, or every dead
// row when ids is empty (in batches of stores.OutboxRedriveLimitDefault).
// Fix what made them fail first: a redriven row is carried out with the
// same payload and idempotency key.
func (r *Relay) Redrive(ctx context.Context, ids ...int64) (int64, error) {
	var total int64
	for {
		res, err := r.store.RedriveOutboxIfDead(ctx, &stores.OutboxRedriveParams{IDs: ids})
		if err != nil {
			return total, fmt.Errorf("outbox: redrive: %w", err)
		}
		total += res.Redriven
		if len(ids) > 0 || res.Redriven < stores.OutboxRedriveLimitDefault {
			return total, nil
		}
	}
}

// PruneDone deletes the rows done more than Config.DoneRetention ago (in
// batches of stores.OutboxPruneLimitDefault) and returns how many. Run
// calls it every Config.PruneInterval; several relays pruning at once is
// safe. Rows in other states are never deleted.
func (r *Relay) PruneDone(ctx context.Context) (int64, error) {
	before := r.cfg.Now().Add(-r.cfg.DoneRetention)
	var total int64
	for {
		res, err := r.store.PruneOutboxIfDone(ctx, &stores.OutboxPruneParams{Before: before})
		if err != nil {
			return total, fmt.Errorf("outbox: prune done rows: %w", err)
		}
		total += res.Deleted
		if res.Deleted < stores.OutboxPruneLimitDefault {
			return total, nil
		}
	}
}
