package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

// Savepoint names the processor uses; they show in the database's logs.
const (
	// SavepointBatch is taken before the BatchHandler runs, once per
	// round.
	SavepointBatch = "ackgap_batch"
	// SavepointMessage is taken before Handler runs for one message.
	SavepointMessage = "ackgap_message"
)

// BatchHandlerFunc handles the messages of one round of a batch at once,
// for set-based SQL (one UPDATE ... FROM unnest(...) for all of them). tx
// is the batch's transaction; msgs are the round's messages (see
// [Processor.Process]: the batch's messages that are neither rejected nor
// duplicates, at most one per key, in their order), each with its event id
// and its key unique in msgs, so one row per key in a set-based UPDATE is
// never two steps of one key. A batch whose keys are all distinct is one
// round: one call. Return nil to keep everything it did; an error (or a
// panic) undoes everything it did in this round and the processor runs
// [Config.Handler] for each of the round's messages instead, each under a
// savepoint of its own. Like a handler, it must do no network I/O: record
// external effects as outbox rows with ackgap.AddOutboxMany(ctx, rows)
// (one statement; ctx carries the batch's transaction; rows are held for
// direct dispatch when Config.Dispatch is set), or
// stores.Store.InsertOutboxManyTx, whose rows relays always claim.
type BatchHandlerFunc[TTx any] func(ctx context.Context, tx TTx, msgs []*message.Message) error

// Config configures [New]. Fields left zero take the default named in
// their doc.
type Config[TTx any] struct {
	// InboxConfig configures the inbox rows the processor writes, whole,
	// as for the inbox middleware: Consumer (required), event id
	// extraction and limit, PayloadMismatch (which also applies to an
	// event id that arrives again earlier in the same batch with another
	// payload), RollbackTimeout and Now, with the defaults of
	// middleware.InboxConfig. Once a message's outcome is final (after
	// the commit), before Trace's end, its ackgap.InboxReport is recorded
	// on the message's ackgap.Delivery (when its context has one) and
	// given to the Observer (when set), with the message's context:
	// Received is
	// when Process started, HandlerStarted when the batch handler or the
	// message's Handler was called (zero if neither was), Committed when
	// the commit returned (applied only). It is called on Process's
	// goroutine and must not block.
	middleware.InboxConfig
	// Handler handles one message in the batch's transaction, under a
	// savepoint of its own: an error or a panic undoes that message only.
	// It gets the same context as behind the inbox middleware:
	// ackgap.TxFromContext, EventIDFromContext, ApplyTransition and
	// AddOutbox work in it, and ackgap.Permanent marks the
	// message rejected (dead-letter) instead of failed (redeliver). Default
	// nil: then BatchHandler is required, and when it fails every message
	// of the batch fails.
	Handler router.HandlerFunc[TTx]
	// BatchHandler, when set, is called once per round of a batch (once
	// per batch when no key repeats in it) before Handler; see
	// [BatchHandlerFunc]. Default nil: Handler runs for each message.
	BatchHandler BatchHandlerFunc[TTx]
	// KeyOf returns msg's ordering key, and false when msg has none (it
	// is then a key of its own). Messages of one key in a batch are
	// applied in their order, one per round, and a message that was not
	// applied holds back the later ones of its key (see
	// [Processor.Process]). Default nil: the Key of the message's
	// ackgap.Delivery when its HasKey is set (kafkabroker fills it with
	// the Kafka record key), else none.
	KeyOf func(msg *message.Message) (key string, ok bool)
	// Trace, when set, starts what traces a message before Process does
	// anything with it, and returns the function Process calls with the
	// message's error (nil for applied and duplicate) once its outcome is
	// final, before Process returns: the function that
	// telemetry.Telemetry.Begin returns, which reads the inbox's report
	// from the message's ackgap.Delivery. Default nil.
	Trace func(msg *message.Message) (end func(err error))
}

// WithDefaults returns a copy of c with every zero field set to its default.
func (c Config[TTx]) WithDefaults() Config[TTx] {
	c.InboxConfig = c.InboxConfig.WithDefaults()
	return c
}

func (c Config[TTx]) validate() error {
	var errs []error
	if c.Handler == nil && c.BatchHandler == nil {
		errs = append(errs, errors.New("Handler and BatchHandler are nil: set at least one"))
	}
	if err := c.InboxConfig.Validate(); err != nil {
		errs = append(errs, errors.Unwrap(err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// Processor runs batches of messages through one transaction each. It is
// safe for concurrent use: concurrent Process calls run concurrent
// transactions.
type Processor[TTx any] struct {
	store stores.Store[TTx]
	cfg   Config[TTx]
	// perMessage is Handler as a Watermill handler; nil without a Handler.
	perMessage message.HandlerFunc
}

// New returns a Processor on store. It returns an error wrapping
// "invalid config" when store or cfg is nil or cfg is invalid (every
// problem at once).
func New[TTx any](store stores.Store[TTx], cfg *Config[TTx]) (*Processor[TTx], error) {
	if cfg == nil {
		return nil, errors.New("invalid config: Config is nil: Consumer and a handler are required")
	}
	if store == nil {
		return nil, errors.New("invalid config: store is nil")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	p := &Processor[TTx]{store: store, cfg: c}
	if c.Handler != nil {
		p.perMessage = router.Adapt(c.Handler)
	}
	return p, nil
}

// Result is what [Processor.Process] did with a batch.
type Result struct {
	// Messages holds the inbox's report on each message given to
	// Process, in their order: the same record the inbox middleware makes
	// of one pass, recorded on the message's ackgap.Delivery. Consumer is
	// the processor's; EventID "" when the message had none; Outcome is
	// applied or duplicate (ack the message), rejected (dead-letter it:
	// Err is permanent) or failed (nack it for redelivery: Err says why);
	// Err is nil for applied and duplicate; Received is when Process
	// started; HandlerStarted when the batch handler, or the message's
	// Handler, was called for it (the later of the two; zero if neither
	// was); Committed is the batch's commit, for applied messages only;
	// FirstTraceParent is, for a duplicate, the W3C traceparent of the
	// delivery that applied the event (kept with its inbox row, or the
	// first copy in this batch), when it was traced.
	Messages []ackgap.InboxReport
	// BatchHandlerErr is the BatchHandler's error (or panic) when it failed
	// and the batch (the round, the first that failed) fell back to
	// Handler; nil otherwise.
	BatchHandlerErr error
	// Rounds is how many rounds ran the handlers: the most messages of one
	// key that reached them (1 when no key repeats; 0 when no handler was
	// called).
	Rounds int
	// Committed is when the batch's commit returned; zero when nothing was
	// committed (Process returned an error, or every message was rejected
	// before the database was asked).
	Committed time.Time
}

// Count returns how many messages had outcome o.
func (r *Result) Count(o ackgap.Outcome) int {
	n := 0
	for i := range r.Messages {
		if r.Messages[i].Outcome == o {
			n++
		}
	}
	return n
}

// Process runs msgs in one transaction and returns once it committed (or
// failed). Each message's event id is extracted and checked first: one
// without an id, or with an over-long one, is rejected. Then one
// statement inserts the inbox rows of the others
// (stores.Store.BeginInboxMany); rows already there are duplicates
// (or rejected, for another payload under PayloadMismatchReject), as is a
// message whose event id an earlier message of msgs carries. The other
// messages go to the handlers in rounds, by key ([Config.KeyOf]): round 1
// holds the first message of each key, round 2 the second of each key
// that has one, and so on, each in msgs's order, so the messages of one
// key must be in msgs in the order they are to be applied (a Kafka
// partition's offset order). Each round goes to the BatchHandler, under a
// savepoint of its own, then, if it fails or is not set, to Handler one
// message at a time, each under a savepoint. A message that failed or was
// rejected by its handler holds back the later messages of its key in
// msgs: they are not applied, and fail with an error wrapping
// [ErrHeldBack] (redeliver them after it, so the key's order holds). The
// inbox rows of the messages not applied are deleted again, so that their
// redelivery applies them. Then the transaction commits, once for all
// rounds.
//
// Outcomes are final only after the commit: acknowledge applied and
// duplicate messages, dead-letter rejected ones and nack failed ones only
// once Process returned (docs/design.md invariant 4). When Process returns an
// error (the database could not begin or commit, ctx ended, a savepoint
// could not be rolled back) nothing was committed and every message is
// failed with that error, rejected ones included: redeliver them all.
// Messages' contexts are restored before Process returns.
func (p *Processor[TTx]) Process(ctx context.Context, msgs []*message.Message) (*Result, error) {
	var ends []func(error)
	if p.cfg.Trace != nil {
		ends = make([]func(error), len(msgs))
		for i, msg := range msgs {
			ends[i] = p.cfg.Trace(msg)
		}
	}
	received := p.cfg.Now()
	res, err := p.process(ctx, msgs, received)
	for i, msg := range msgs {
		r := &res.Messages[i]
		if r.Outcome == ackgap.OutcomeApplied {
			r.Committed = res.Committed
		}
		if d, ok := ackgap.DeliveryFromContext(msg.Context()); ok {
			d.RecordInbox(r)
		}
		if p.cfg.Observer != nil {
			p.cfg.Observer(msg.Context(), r)
		}
		if ends != nil {
			ends[i](r.Err)
		}
	}
	return res, err
}

// ProcessErrors runs msgs like [Processor.Process] and returns one error
// per message, in order: nil for an applied or duplicate message (ack
// it), the message's error for a rejected or failed one (dead-letter or
// nack it). When the batch as a whole failed, every message has that
// error. It is the sqsbroker.BatchFunc of the processor, for
// sqsbroker.NewBatchConsumer and sqsbroker.LambdaBatchHandler.
func (p *Processor[TTx]) ProcessErrors(ctx context.Context, msgs []*message.Message) []error {
	res, _ := p.Process(ctx, msgs)
	errs := make([]error, len(msgs))
	for i := range res.Messages {
		if o := res.Messages[i].Outcome; o != ackgap.OutcomeApplied && o != ackgap.OutcomeDuplicate {
			errs[i] = res.Messages[i].Err
		}
	}
	return errs
}

// process is Process without its Trace and Observer.
func (p *Processor[TTx]) process(ctx context.Context, msgs []*message.Message, received time.Time) (*Result, error) {
	res := &Result{Messages: make([]ackgap.InboxReport, len(msgs))}
	for i := range res.Messages {
		res.Messages[i].Consumer, res.Messages[i].Received = p.cfg.Consumer, received
	}
	rows := make([]stores.InboxManyRow, 0, len(msgs))
	rowOf := make([]int, len(msgs))    // index into rows, or -1
	repeatOf := make([]int, len(msgs)) // for a later copy of an id in msgs, its first copy's row; else -1
	hashes := make([][]byte, len(msgs))
	firstOf := make(map[string]int, len(msgs))
	msgOfRow := make([]int, 0, len(msgs)) // the message of each row
	for i, msg := range msgs {
		rowOf[i], repeatOf[i] = -1, -1
		r := &res.Messages[i]
		id, err := p.cfg.EventIDOf(msg)
		r.EventID = id
		if err != nil {
			r.Outcome, r.Err = ackgap.OutcomeRejected, err
			continue
		}
		hash := stores.PayloadHash(msg.Payload)
		hashes[i] = hash
		if j, ok := firstOf[id]; ok {
			repeatOf[i] = j // decided once the inbox said what the id holds
			continue
		}
		firstOf[id] = len(rows)
		rowOf[i] = len(rows)
		msgOfRow = append(msgOfRow, i)
		rows = append(rows, stores.InboxManyRow{EventID: id, PayloadHash: hash, TraceParent: ackgap.TraceParentFromContext(msg.Context())})
	}
	if len(rows) == 0 {
		return res, nil
	}
	var progress []stores.Progress
	for _, msg := range msgs {
		if pr := stores.ProgressOf(msg.Context()); pr != nil {
			progress = append(progress, *pr)
		}
	}
	begun, err := p.store.BeginInboxMany(ctx, &stores.BeginInboxManyParams{
		Consumer: p.cfg.Consumer, Rows: rows, Now: received, Savepoint: p.batchSavepoint(),
		Progress: stores.MergeProgress(progress),
	})
	if err != nil {
		return res.failAll(fmt.Errorf("ackgap batch: begin: %w", err))
	}
	var todo []int
	for i := range msgs {
		if j := repeatOf[i]; j >= 0 {
			// A later copy in this batch: compared with the payload the id
			// will hold, the stored one when the first copy was a
			// duplicate, else the first copy's.
			r, o, held := &res.Messages[i], begun.Rows[j], rows[j].PayloadHash
			r.FirstTraceParent = rows[j].TraceParent
			if o.Duplicate {
				held, r.FirstTraceParent = o.StoredHash, o.TraceParent
			}
			if held != nil && !bytes.Equal(held, hashes[i]) && p.cfg.PayloadMismatch == middleware.PayloadMismatchReject {
				r.Outcome, r.Err = ackgap.OutcomeRejected, p.conflict(r.EventID)
			} else {
				r.Outcome = ackgap.OutcomeDuplicate
			}
			continue
		}
		if rowOf[i] < 0 {
			continue
		}
		r, o := &res.Messages[i], begun.Rows[rowOf[i]]
		switch {
		case o.Duplicate && o.PayloadMismatch && p.cfg.PayloadMismatch == middleware.PayloadMismatchReject:
			r.Outcome, r.Err = ackgap.OutcomeRejected, p.conflict(r.EventID)
		case o.Duplicate:
			r.Outcome, r.FirstTraceParent = ackgap.OutcomeDuplicate, o.TraceParent
		default:
			todo = append(todo, i)
		}
	}
	tx := begun.Tx
	hold := middleware.NewOutboxHold(p.cfg.Dispatch)
	defer hold.Release() // a no-op after Dispatch
	if err := p.apply(ctx, tx, hold, msgs, todo, res); err != nil {
		p.rollback(ctx, tx)
		return res.failAll(err)
	}
	// A later copy of an id whose first copy in this batch failed or was
	// rejected by its handler shares that fate: the event is not in the
	// inbox, so the copy is no duplicate of anything applied.
	for i := range msgs {
		j := repeatOf[i]
		if j < 0 || res.Messages[i].Outcome != ackgap.OutcomeDuplicate || begun.Rows[j].Duplicate {
			continue
		}
		if first := res.Messages[msgOfRow[j]]; first.Outcome == ackgap.OutcomeFailed || first.Outcome == ackgap.OutcomeRejected {
			r := &res.Messages[i]
			r.Outcome, r.FirstTraceParent = first.Outcome, ""
			r.Err = fmt.Errorf("ackgap batch: the first copy of event id %q in this batch was not applied: %w", r.EventID, first.Err)
		}
	}
	if err := ctx.Err(); err != nil {
		p.rollback(ctx, tx)
		return res.failAll(fmt.Errorf("ackgap batch: context ended before commit: %w", err))
	}
	if err := p.store.CommitTx(ctx, tx); err != nil {
		// The transaction is over either way; redeliveries find the inbox
		// rows if the commit happened after all.
		return res.failAll(fmt.Errorf("ackgap batch: commit: %w: %w", ackgap.ErrCommitUnknown, err))
	}
	res.Committed = p.cfg.Now()
	//ackgapvet:ignore multitx Dispatch hands the committed outbox rows to the relay, whose own transaction marks them published; its failure leaves them for the relay's next pass, not the batch half-applied
	hold.Dispatch()
	return res, nil
}

// batchSavepoint is the savepoint BeginInboxMany takes: the BatchHandler's.
func (p *Processor[TTx]) batchSavepoint() string {
	if p.cfg.BatchHandler == nil {
		return ""
	}
	return SavepointBatch
}

// apply runs the handlers for msgs[todo] in tx, round by round, and
// records their outcomes, holding their outbox rows for direct dispatch
// in hold; an error means tx is unusable and the batch fails.
func (p *Processor[TTx]) apply(ctx context.Context, tx TTx, hold *middleware.OutboxHold, msgs []*message.Message, todo []int, res *Result) error {
	if len(todo) == 0 {
		return nil
	}
	rounds, keys := p.rounds(msgs, todo)
	var undone []string
	var blocked map[string]string // key -> event id of the message that held it back
	for r, round := range rounds {
		if blocked != nil {
			round = holdBack(round, keys, blocked, res, &undone)
			if len(round) == 0 {
				continue
			}
		}
		if p.cfg.BatchHandler != nil && r > 0 {
			// Round 1's savepoint was taken by BeginInboxMany.
			if err := p.store.SavepointTx(ctx, tx, SavepointBatch); err != nil {
				return fmt.Errorf("%w: savepoint of round %d: %w", errTxBroken, r+1, err)
			}
		}
		res.Rounds++
		if err := p.applyRound(ctx, tx, hold, msgs, round, res, &undone); err != nil {
			return err
		}
		if len(rounds) == 1 {
			break
		}
		for _, i := range round {
			if o := res.Messages[i].Outcome; o != ackgap.OutcomeApplied && keys[i].ok {
				if blocked == nil {
					blocked = make(map[string]string)
				}
				if _, ok := blocked[keys[i].key]; !ok {
					blocked[keys[i].key] = res.Messages[i].EventID
				}
			}
		}
	}
	if len(undone) == 0 {
		return nil
	}
	if _, err := p.store.DeleteInboxTx(ctx, tx, &stores.DeleteInboxParams{Consumer: p.cfg.Consumer, EventIDs: undone}); err != nil {
		return fmt.Errorf("ackgap batch: delete the inbox rows of failed messages: %w", err)
	}
	return nil
}

// msgKey is a message's ordering key; ok is false for a message without
// one, a key of its own.
type msgKey struct {
	key string
	ok  bool
}

// keyOf returns msg's ordering key (Config.KeyOf, or its Delivery's).
func (p *Processor[TTx]) keyOf(msg *message.Message) msgKey {
	if p.cfg.KeyOf != nil {
		k, ok := p.cfg.KeyOf(msg)
		return msgKey{k, ok}
	}
	if d, ok := ackgap.DeliveryFromContext(msg.Context()); ok && d.HasKey {
		return msgKey{d.Key, true}
	}
	return msgKey{}
}

// rounds splits todo by key: round r holds the r-th message of each key,
// in todo's order. keys holds each message's key, by index in msgs.
func (p *Processor[TTx]) rounds(msgs []*message.Message, todo []int) (rounds [][]int, keys []msgKey) {
	keys = make([]msgKey, len(msgs))
	var seen map[string]int // messages of each key so far
	repeats := false
	for _, i := range todo {
		keys[i] = p.keyOf(msgs[i])
		if !keys[i].ok {
			continue
		}
		if seen == nil {
			seen = make(map[string]int, len(todo))
		}
		seen[keys[i].key]++
		repeats = repeats || seen[keys[i].key] > 1
	}
	if !repeats {
		return [][]int{todo}, keys
	}
	clear(seen)
	for _, i := range todo {
		r := 0
		if keys[i].ok {
			r = seen[keys[i].key]
			seen[keys[i].key]++
		}
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], i)
	}
	return rounds, keys
}

// holdBack fails the messages of round whose key an earlier round did
// not apply, adds their event ids to undone and returns the others.
func holdBack(round []int, keys []msgKey, blocked map[string]string, res *Result, undone *[]string) []int {
	kept := round[:0:0]
	for _, i := range round {
		by, ok := blocked[keys[i].key]
		if !ok || !keys[i].ok {
			kept = append(kept, i)
			continue
		}
		r := &res.Messages[i]
		r.Outcome = ackgap.OutcomeFailed
		r.Err = fmt.Errorf("%w: key %q, behind event id %q", ErrHeldBack, keys[i].key, by)
		*undone = append(*undone, r.EventID)
	}
	return kept
}

// applyRound runs the handlers for msgs[round], at most one message per
// key, records their outcomes and adds the event ids of those not applied
// to undone; an error means tx is unusable and the batch fails. With a
// BatchHandler the savepoint SavepointBatch is set.
func (p *Processor[TTx]) applyRound(ctx context.Context, tx TTx, hold *middleware.OutboxHold, msgs []*message.Message, round []int, res *Result, undone *[]string) error {
	var batchErr error
	if p.cfg.BatchHandler != nil {
		batch := make([]*message.Message, len(round))
		for j, i := range round {
			batch[j] = msgs[i]
		}
		started := p.cfg.Now()
		for _, i := range round {
			res.Messages[i].HandlerStarted = started
		}
		mark := hold.Mark()
		err := callBatch(middleware.WithBatchTx(ctx, p.store, tx, p.cfg.Consumer, hold), p.cfg.BatchHandler, tx, batch)
		if err == nil {
			err = p.store.ReleaseSavepointTx(ctx, tx, SavepointBatch)
		}
		if err != nil {
			hold.RollbackTo(mark)
		}
		if err == nil {
			for _, i := range round {
				res.Messages[i].Outcome = ackgap.OutcomeApplied
			}
			return nil
		}
		batchErr = err
		if res.BatchHandlerErr == nil {
			res.BatchHandlerErr = err
		}
		if rbErr := p.store.RollbackToSavepointTx(ctx, tx, SavepointBatch); rbErr != nil {
			return fmt.Errorf("ackgap batch: undo the batch handler: %w", rbErr)
		}
	}
	for _, i := range round {
		r := &res.Messages[i]
		var err error
		if p.perMessage == nil {
			err = fmt.Errorf("ackgap batch: batch handler failed and there is no per-message Handler: %w", batchErr)
		} else {
			r.HandlerStarted = p.cfg.Now()
			if err = p.runOne(ctx, tx, hold, msgs[i], r.EventID); errors.Is(err, errTxBroken) {
				return err
			}
		}
		err = p.store.ClassifyError(err) // the handler's own statements return driver errors
		switch {
		case err == nil:
			r.Outcome = ackgap.OutcomeApplied
			continue
		case ackgap.IsPermanent(err):
			r.Outcome, r.Err = ackgap.OutcomeRejected, err
		default:
			r.Outcome, r.Err = ackgap.OutcomeFailed, err
		}
		*undone = append(*undone, r.EventID)
	}
	return nil
}

// runOne runs Handler for msg under the message's savepoint in tx, with
// msg's context carrying tx as the inbox middleware's does
// (middleware.WithTx): released when the handler returns nil, rolled back
// to when it fails or panics (a panic is an error). An error wrapping
// errTxBroken means the savepoint could not be set or rolled back to.
func (p *Processor[TTx]) runOne(ctx context.Context, tx TTx, hold *middleware.OutboxHold, msg *message.Message, eventID string) error {
	if err := p.store.SavepointTx(ctx, tx, SavepointMessage); err != nil {
		return fmt.Errorf("%w: %w", errTxBroken, err)
	}
	mark := hold.Mark()
	orig := msg.Context()
	msg.SetContext(middleware.WithTx(withValuesOf(ctx, orig), p.store, tx, p.cfg.Consumer, eventID, hold))
	err := callOne(p.perMessage, msg)
	if err == nil {
		err = middleware.Flush(msg.Context())
	}
	msg.SetContext(orig)
	if err == nil {
		// A queued statement (ackgap.AddOutbox, a transition the handler
		// did not read) is sent ahead of the RELEASE and may fail it.
		if err = p.store.ReleaseSavepointTx(ctx, tx, SavepointMessage); err == nil {
			return nil
		}
	}
	hold.RollbackTo(mark)
	if rbErr := p.store.RollbackToSavepointTx(ctx, tx, SavepointMessage); rbErr != nil {
		return fmt.Errorf("%w: %w", errTxBroken, rbErr)
	}
	return err
}

// callOne calls h; a panic is an error.
func callOne(h message.HandlerFunc, msg *message.Message) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("ackgap batch: handler panicked: %v", v)
		}
	}()
	_, err = h(msg)
	return err
}

// rollback ends tx on a context that may have ended.
func (p *Processor[TTx]) rollback(ctx context.Context, tx TTx) {
	rbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.RollbackTimeout)
	defer cancel()
	_ = p.store.RollbackTx(rbCtx, tx)
}

// failAll marks every message failed with err and returns r and err.
func (r *Result) failAll(err error) (*Result, error) {
	for i := range r.Messages {
		r.Messages[i].Outcome, r.Messages[i].Err = ackgap.OutcomeFailed, err
	}
	r.Committed = time.Time{}
	return r, err
}

// callBatch calls h; a panic is an error.
func callBatch[TTx any](ctx context.Context, h BatchHandlerFunc[TTx], tx TTx, msgs []*message.Message) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("ackgap batch: batch handler panicked: %v", v)
		}
	}()
	return h(ctx, tx, msgs)
}

func (p *Processor[TTx]) conflict(id string) error {
	return ackgap.Permanent(ackgap.ReasonEventIDConflict,
		fmt.Errorf("%w: consumer %q, event id %q", ackgap.ErrEventIDConflict, p.cfg.Consumer, id))
}
