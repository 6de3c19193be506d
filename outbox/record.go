package outbox

import (
	"context"

	"github.com/ackgap/ackgap/stores"
)

// recorder records the outcomes of finished effects: one goroutine takes
// every outcome that is waiting when it is free and records them together,
// in one stores.OutboxStore.SettleOutboxManyIfClaimed call (one statement,
// one commit), so a claim whose effects finish together is recorded in one
// or two statements instead of one per row (group commit). Each row keeps
// its claim-token guard.
type recorder struct {
	r    *Relay
	ctx  context.Context // values only: records run after Run's ctx ended
	in   chan *recordReq
	done chan struct{}
}

// recordReq is one outcome waiting to be recorded; done is closed once
// rep says what was recorded.
type recordReq struct {
	rep     *Report
	outcome Outcome
	done    chan struct{}
}

// startRecorder starts a recorder; stop it once no carryOut is left.
func (r *Relay) startRecorder(ctx context.Context) *recorder {
	rec := &recorder{r: r, ctx: context.WithoutCancel(ctx), in: make(chan *recordReq, r.cfg.Concurrency), done: make(chan struct{})}
	go rec.loop()
	return rec
}

// record records outcome for rep and returns once it is recorded (or
// failed to be: rep.Outcome says which).
func (rec *recorder) record(rep *Report, outcome Outcome) {
	req := &recordReq{rep: rep, outcome: outcome, done: make(chan struct{})}
	rec.in <- req
	<-req.done
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
			next = q
		}
		batch := []*recordReq{next}
		ids := map[int64]bool{next.rep.Claim.ID: true}
		next = nil
	gather:
		for len(batch) < stores.OutboxClaimLimitMax {
			select {
			case q, ok := <-rec.in:
				if !ok {
					break gather
				}
				if ids[q.rep.Claim.ID] {
					// The row was claimed again by this relay (a lapsed
					// lease): one settlement per row and statement.
					next = q
					break gather
				}
				ids[q.rep.Claim.ID] = true
				batch = append(batch, q)
			default:
				break gather
			}
		}
		rec.r.recordMany(rec.ctx, batch)
		for _, q := range batch {
			close(q.done)
		}
	}
}

// recordMany writes the outcomes of batch, each guarded by its claim, on
// a context bounded by RecordTimeout, and sets each report's Outcome:
// the one asked for, OutcomeClaimLost or OutcomeUnrecorded.
func (r *Relay) recordMany(ctx context.Context, batch []*recordReq) {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.RecordTimeout)
	defer cancel()
	p := &stores.OutboxSettleManyParams{Rows: make([]stores.OutboxSettlement, len(batch))}
	for i, q := range batch {
		p.Rows[i] = stores.OutboxSettlement{ID: q.rep.Claim.ID, ClaimToken: q.rep.Claim.Token, State: settledState(q.outcome)}
		if q.outcome != OutcomeDone {
			p.Rows[i].LastError = lastError(q.rep.Err)
		}
		if q.outcome == OutcomeRetry {
			p.Rows[i].Delay = q.rep.Delay
		}
	}
	res, err := r.store.SettleOutboxManyIfClaimed(rctx, p)
	now := r.cfg.Now()
	for i, q := range batch {
		switch {
		case err != nil:
			q.rep.Outcome, q.rep.RecordErr = OutcomeUnrecorded, err
		case !res.Changed[i]:
			q.rep.Outcome = OutcomeClaimLost
		default:
			q.rep.Outcome, q.rep.Recorded = q.outcome, now
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
