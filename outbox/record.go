package outbox

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ackgap/ackgap/stores"
)

// recorder records the outcomes of finished effects: one goroutine takes
// every outcome that is waiting when it is free, waits up to
// Config.RecordWait for those of the effects still in flight, and records
// them together, in one stores.OutboxStore.SettleOutboxIfClaimedOrHeld call
// (one statement, one commit), so a claim whose effects finish together is
// recorded in one statement instead of one per row (group commit). Each row
// keeps its claim-token guard.
type recorder struct {
	r    *Relay
	ctx  context.Context // values only: records run after Run's ctx ended
	in   chan *recordReq
	done chan struct{}
	// busy counts the effects started (enter) whose outcome the loop has
	// not yet taken from in nor was given up (leave): the outcomes worth
	// waiting for. Only the loop takes from in, so an outcome sent but not
	// yet taken still counts, and the loop finds it waiting.
	busy atomic.Int64
	// wait: wait for the effects in flight (Config.RecordWait is not
	// negative and the store records many outcomes in one statement).
	wait bool
	// coming, when not nil, reports outcomes on their way that busy does
	// not count yet: rows held for direct dispatch (reserved by a
	// transaction in progress, dispatched, or in flight), whose outcomes
	// follow within milliseconds while the relay is busy.
	coming func() bool
}

// recordReq is one outcome waiting to be recorded.
type recordReq struct {
	rep     *Report
	outcome Outcome
}

// startRecorder starts a recorder; stop it once no carryOut is left.
// coming, when not nil, reports outcomes on their way beyond the effects
// entered (recorder.coming).
func (r *Relay) startRecorder(ctx context.Context, coming func() bool) *recorder {
	rec := &recorder{r: r, ctx: context.WithoutCancel(ctx), in: make(chan *recordReq, r.cfg.Concurrency), done: make(chan struct{}),
		wait: r.cfg.RecordWait >= 0, coming: coming}
	go rec.loop()
	return rec
}

// enter counts an effect whose outcome is coming: record or leave
// follows.
func (rec *recorder) enter() { rec.busy.Add(1) }

// leave uncounts an effect entered whose outcome will not be recorded.
func (rec *recorder) leave() { rec.busy.Add(-1) }

// record hands outcome for rep, an effect entered, to the loop, which
// records it, sets rep.Outcome to what was recorded, and reports rep
// (Relay.report). It returns at once unless Concurrency outcomes are
// waiting already: the effect's slot is not held while its outcome waits
// for the statement.
func (rec *recorder) record(rep *Report, outcome Outcome) {
	rec.in <- &recordReq{rep: rep, outcome: outcome}
}

// stop ends the recorder after the outcomes sent so far; no record call
// may follow or run concurrently.
func (rec *recorder) stop() {
	close(rec.in)
	<-rec.done
}

func (rec *recorder) loop() {
	defer close(rec.done)
	var next *recordReq // taken from in but left for the next batch
	for {
		if next == nil {
			q, ok := <-rec.in
			if !ok {
				return
			}
			rec.busy.Add(-1)
			next = q
		}
		var batch []*recordReq
		batch, next = rec.gather(next)
		rec.r.recordMany(rec.ctx, batch)
		for _, q := range batch {
			rec.r.report(rec.ctx, q.rep)
		}
	}
}

// gather returns a batch that starts with first: the outcomes waiting,
// then those that arrive while effects are still in flight or more are
// coming (rec.coming), for at most RecordWait once none was waiting; at most stores.OutboxClaimLimitMax in all. A second
// outcome for a row already in the batch (the row was claimed again by
// this relay after its lease lapsed) ends the batch and is returned as
// next: one settlement per row and statement.
func (rec *recorder) gather(first *recordReq) (batch []*recordReq, next *recordReq) {
	batch = []*recordReq{first}
	ids := map[rowRef]bool{refOf(first.rep): true}
	var linger *time.Timer // armed once nothing is waiting
	defer func() {
		if linger != nil {
			linger.Stop()
		}
	}()
	for len(batch) < stores.OutboxClaimLimitMax {
		var q *recordReq
		var ok bool
		select {
		case q, ok = <-rec.in:
		default:
			if !rec.wait || rec.busy.Load() <= 0 && (rec.coming == nil || !rec.coming()) {
				return batch, nil
			}
			if linger == nil {
				linger = time.NewTimer(rec.r.cfg.RecordWait)
			}
			select {
			case q, ok = <-rec.in:
			case <-linger.C:
				return batch, nil
			}
		}
		if !ok {
			return batch, nil
		}
		rec.busy.Add(-1)
		if ids[refOf(q.rep)] {
			return batch, q
		}
		ids[refOf(q.rep)] = true
		batch = append(batch, q)
	}
	return batch, nil
}

// rowRef identifies a row in a batch of outcomes: a claimed row by its
// id, a dispatched one (no claim token) by its idempotency key.
type rowRef struct {
	id  int64
	key string
}

func refOf(rep *Report) rowRef {
	if rep.Row.Claim.Token == "" {
		return rowRef{key: rep.Row.IdempotencyKey}
	}
	return rowRef{id: rep.Row.Claim.ID}
}

// recordMany writes the outcomes of batch, each guarded by its claim or,
// for dispatched rows, its hold (SettleOutboxIfClaimedOrHeld): one call
// for each kind present, so that a failure of one leaves the other's
// outcomes known, on a context bounded by RecordTimeout. It sets each
// report's Outcome: the one asked for, OutcomeClaimLost or
// OutcomeUnrecorded.
func (r *Relay) recordMany(ctx context.Context, batch []*recordReq) {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.RecordTimeout)
	defer cancel()
	var claimed, held []*recordReq
	for _, q := range batch {
		if q.rep.Row.Claim.Token == "" {
			held = append(held, q)
		} else {
			claimed = append(claimed, q)
		}
	}
	for _, part := range [][]*recordReq{claimed, held} {
		if len(part) == 0 {
			continue
		}
		p := &stores.OutboxSettleParams{Rows: make([]stores.OutboxSettlement, len(part))}
		for i, q := range part {
			c := q.rep.Row.Claim
			p.Rows[i] = stores.OutboxSettlement{ID: c.ID, ClaimToken: c.Token,
				State: settledState(q.outcome), LastError: q.lastError(), Delay: q.delay()}
			if c.Token == "" {
				p.Rows[i].IdempotencyKey, p.Rows[i].HeldUntil = q.rep.Row.IdempotencyKey, c.Until
			}
		}
		res, err := r.store.SettleOutboxIfClaimedOrHeld(rctx, p)
		r.settled(part, res, err)
	}
}

// lastError is the error text to keep for q's outcome ("" for done).
func (q *recordReq) lastError() string {
	if q.outcome == OutcomeDone {
		return ""
	}
	return lastError(q.rep.Err)
}

// delay is the backoff of a retry (0 for other outcomes).
func (q *recordReq) delay() time.Duration {
	if q.outcome == OutcomeRetry {
		return q.rep.Delay
	}
	return 0
}

// settled sets the Outcome of each report of batch from what its settle
// statement did.
func (r *Relay) settled(batch []*recordReq, res *stores.OutboxSettleResult, err error) {
	now := r.cfg.Now()
	for i, q := range batch {
		switch {
		case err != nil:
			q.rep.Outcome, q.rep.RecordErr = OutcomeUnrecorded, err
		case !res.Changed[i]:
			q.rep.Outcome = OutcomeClaimLost
		default:
			q.rep.Outcome, q.rep.Recorded = q.outcome, now
			if q.rep.Row.ID == 0 {
				q.rep.Row.ID = res.IDs[i] // a dispatched row: known by its key until now
			}
		}
	}
}

// settledState is the row state an outcome records.
func settledState(o Outcome) stores.OutboxState {
	switch o {
	case OutcomeDone:
		return stores.OutboxDone
	case OutcomeRetry:
		return stores.OutboxPending
	default:
		return stores.OutboxDead
	}
}
