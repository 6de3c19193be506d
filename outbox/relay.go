package outbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/stores"
)

// Defaults and limits of [Config].
const (
	// ConcurrencyDefault is how many effects one relay runs at once: with
	// a provider that answers in 20 ms, 100 in flight carry out up to 5,000
	// rows/s, so the provider's latency is not what bounds the pipeline
	// (one claim statement fetches at least 50 rows, one settle statement
	// records those that finished together). Each effect in flight holds a
	// goroutine and, for the HTTP effect, a connection.
	ConcurrencyDefault = 100
	// ConcurrencyMax is the largest Concurrency: a claim takes at most this
	// many rows (stores.OutboxClaimLimitMax).
	ConcurrencyMax = stores.OutboxClaimLimitMax
	// LeaseDefault is how long a claim holds a row.
	LeaseDefault = time.Minute
	// PollIntervalDefault is the time between two claims when nothing woke
	// the relay: 1 s, as watermill-sql polls. The poll is the fallback, not
	// the path: rows committed by a consumer of this process reach the
	// relay at once, held, without a claim (direct dispatch,
	// Config.DispatchLimit); rows committed elsewhere wake it through the
	// store's notifications (pgxstore: LISTEN/NOTIFY); a retried row wakes
	// it when it comes due. Left to the poll are rows whose hold lapsed
	// (their process died: they wait a Lease anyway), notifications lost
	// while the listener reconnects, rows written by code that does not
	// notify, and stores without notifications (SQLite, MySQL), whose
	// rows wait up to this long. Each poll is a claim statement that
	// usually finds nothing: polling every 10 ms beside direct dispatch
	// cost about as much CPU as carrying the rows out, and a quarter of
	// ackgap's CPU per event in the SQS modes benchmark
	// (benchmarks/RESULTS.md, "SQS modes: notes"). Lower it for a store
	// without notifications when rows from other processes must go out
	// sooner.
	PollIntervalDefault = time.Second
	// MaxAttemptsDefault is how many times a row's effect is tried before
	// the row is dead. With the default backoff (1 s doubling to 10 min)
	// the 20th attempt comes about 2 hours after the first.
	MaxAttemptsDefault = 20
	// RetryInitialIntervalDefault is the backoff after the first failure.
	RetryInitialIntervalDefault = time.Second
	// RetryMaxIntervalDefault caps the backoff.
	RetryMaxIntervalDefault = 10 * time.Minute
	// RetryJitter spreads each backoff uniformly over ±20% of it, so rows
	// that failed together (an outage) do not come back together.
	RetryJitter = 0.2
	// RetryAfterMax caps the delay a [RetryAfter] error (an HTTP
	// Retry-After header) asks for.
	RetryAfterMax = 24 * time.Hour
	// StopTimeoutDefault bounds how long Run waits, once its context
	// ended, for effects in flight to finish and be recorded.
	StopTimeoutDefault = 10 * time.Second
	// RecordTimeoutDefault bounds the statement that records an outcome.
	RecordTimeoutDefault = 5 * time.Second
	// RecordWaitDefault is how long the relay waits, after an outcome,
	// for the outcomes of the other effects in flight, so that they are
	// recorded in one statement (see Config.RecordWait). Much of a
	// settle statement's cost is the same whatever its rows (its planning
	// and commit; pgxstore's BenchmarkSettleHeld on a loaded machine:
	// 1.1 ms of backend CPU for 10 rows, about 1.9 for 40, 3.5 for 100):
	// at 8,000 rows/s, 10 ms, also waiting for the rows held for direct
	// dispatch, gathers some 80 rows per statement where 2 ms gathered 48
	// (the SQS modes benchmark: relay PostgreSQL CPU per event down by a
	// quarter).
	RecordWaitDefault = 10 * time.Millisecond
	// DoneRetentionDefault is how long done rows are kept before Run prunes
	// them: while a done row exists, its idempotency key dedupes a second
	// insert of the same effect (stores.Store.QueueOutboxTx).
	DoneRetentionDefault = 7 * 24 * time.Hour
	// PruneIntervalDefault is the time between two prunes of done rows.
	PruneIntervalDefault = time.Hour
	// LastErrorMaxBytes caps the error text kept on a row.
	LastErrorMaxBytes = 2048
	// DispatchLimitDefault is how many rows a relay holds for direct
	// dispatch at once, waiting or in flight (see Config.DispatchLimit):
	// about a hundred batches of 50 events with two effects each.
	DispatchLimitDefault = 10000
)

// Config configures a [Relay]. Fields left zero take the default named in
// their doc; negative values are configuration errors.
type Config struct {
	// Effects maps an outbox row kind (ackgap.OutboxEntry.Kind) to
	// the effect that carries it out. The relay claims only rows of these
	// kinds: rows of other kinds wait for a relay that has them. Required,
	// at least one; kinds non-empty, effects non-nil.
	Effects map[string]Effect
	// Concurrency is how many effects run at once, within a claim and
	// across claims. The relay claims only as many rows as it has free
	// slots (at least half of them at a time), so a claimed row's lease
	// starts when its effect does. Size it as the rows/s to carry out times
	// the effect's latency (100 at 20 ms: 5,000 rows/s), within what the
	// other side accepts. Default ConcurrencyDefault (100), at most
	// ConcurrencyMax (1000).
	Concurrency int
	// Lease is how long a claim holds a row: a relay that dies mid-effect
	// loses its rows to the next claimer after Lease, and the effect is
	// repeated with the same idempotency key. Longer means slower recovery
	// after a crash; shorter than an effect call means a second relay may
	// call it while the first still is. Default LeaseDefault (1 min).
	Lease time.Duration
	// EffectTimeout bounds one effect call (its ctx); it must be shorter
	// than Lease. Default: half of Lease (30 s with the default Lease).
	EffectTimeout time.Duration
	// PollInterval is the time between two claims when nothing woke the
	// relay. Direct dispatch hands this process's rows over at once, and
	// stores with notifications (pgxstore: LISTEN/NOTIFY) wake it soon
	// after a commit elsewhere (pgxstore: within its
	// Config.NotifyInterval, 10 ms by default), so polling is the fallback
	// (see PollIntervalDefault for what it still finds); SQLite and MySQL
	// are only polled. Default PollIntervalDefault (1 s).
	PollInterval time.Duration
	// MaxAttempts is how many times a row's effect is tried, the first
	// included; a row that fails that often is dead (redrivable). Default
	// MaxAttemptsDefault (20).
	MaxAttempts int
	// RetryInitialInterval is the backoff after the first failure; it
	// doubles with each attempt up to RetryMaxInterval, ±RetryJitter.
	// Defaults 1 s and 10 min.
	RetryInitialInterval, RetryMaxInterval time.Duration
	// StopTimeout bounds how long Run waits, once its context ended, for
	// effects in flight; after it their contexts are cancelled, and rows
	// whose effect then fails are left claimed: their lease lapses and
	// another relay carries them out again. Within the same bound Run
	// waits for the transactions of rows it held for direct dispatch to
	// commit or roll back, and releases the committed rows (see Run). Default StopTimeoutDefault
	// (10 s); 0 is replaced by the default, so use a tiny value to cancel
	// at once.
	StopTimeout time.Duration
	// RecordTimeout bounds the statement that records an outcome. It runs
	// even after Run's context ended, so a finished effect is recorded.
	// Default RecordTimeoutDefault (5 s).
	RecordTimeout time.Duration
	// RecordWait is how long an outcome waits for those of the other
	// effects still in flight before the relay records what it has, in one
	// statement (stores.OutboxStore.SettleOutboxIfClaimedOrHeld). It waits
	// only while effects are in flight or rows are held for direct
	// dispatch (reserved by a transaction in progress, or handed over and
	// not yet carried out), and no longer than this after the first
	// outcome waiting:
	// the effects of one claim that finish within RecordWait of each other
	// cost one statement and one commit instead of one each. It delays the
	// recording (the row stays claimed, its effect is done), not the next
	// effect: a slot (Concurrency) is free once its effect returned, and
	// up to Concurrency outcomes wait for their statement beside the
	// effects in flight (then a finished effect waits to hand its outcome
	// over). A crash in that window repeats the effect with the same
	// idempotency key, as any crash before the recording does. Default
	// RecordWaitDefault (10 ms); negative: record at once what is waiting.
	RecordWait time.Duration
	// DoneRetention is how long done rows are kept: Run deletes rows done
	// longer ago every PruneInterval. Default DoneRetentionDefault (7
	// days).
	DoneRetention time.Duration
	// PruneInterval is the time between two prunes of done rows by Run.
	// Default PruneIntervalDefault (1 h).
	PruneInterval time.Duration
	// Observer receives a [Report] per row carried out (or not), once its
	// outcome was recorded: from the relay's recording goroutine, in the
	// order of the recordings (or, for a row whose effect was cut short by
	// the stop, from the goroutine that called it). It may be called
	// concurrently and must not block: the next recording waits for it.
	// Default nil.
	Observer func(ctx context.Context, r *Report)
	// Logger receives errors (claims, recording) and dead rows. Default
	// watermill.NopLogger.
	Logger watermill.LoggerAdapter
	// Now is the clock of reports and of Run's pruning cutoff; claims,
	// leases and delays use the store's clock. Default time.Now.
	Now func() time.Time
	// DispatchLimit is how many rows the relay holds for direct dispatch
	// at once (middleware.Dispatcher: rows handed over by the inbox of
	// this process right after their commit), waiting for a slot or in
	// flight; rows beyond it are written due at once and claimed as
	// usual. Dispatched rows take their slots (Concurrency) first; claims
	// get the free ones. A row that waits for a slot until its hold would
	// end before an effect call could finish (Lease - EffectTimeout after
	// the handler added it) is left to the claimers: size it to what the
	// relay carries out in that time. Default DispatchLimitDefault
	// (10,000), at most ConcurrencyMax*10.
	DispatchLimit int
}

// WithDefaults returns a copy of c with every zero field set to its
// default. Effects is copied, not shared.
func (c Config) WithDefaults() Config {
	c.Effects = maps.Clone(c.Effects)
	if c.Concurrency == 0 {
		c.Concurrency = ConcurrencyDefault
	}
	if c.Lease == 0 {
		c.Lease = LeaseDefault
	}
	if c.EffectTimeout == 0 {
		c.EffectTimeout = c.Lease / 2
	}
	if c.PollInterval == 0 {
		c.PollInterval = PollIntervalDefault
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = MaxAttemptsDefault
	}
	if c.RetryInitialInterval == 0 {
		c.RetryInitialInterval = RetryInitialIntervalDefault
	}
	if c.RetryMaxInterval == 0 {
		c.RetryMaxInterval = RetryMaxIntervalDefault
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = StopTimeoutDefault
	}
	if c.RecordTimeout == 0 {
		c.RecordTimeout = RecordTimeoutDefault
	}
	if c.RecordWait == 0 {
		c.RecordWait = RecordWaitDefault
	}
	if c.DoneRetention == 0 {
		c.DoneRetention = DoneRetentionDefault
	}
	if c.PruneInterval == 0 {
		c.PruneInterval = PruneIntervalDefault
	}
	if c.Logger == nil {
		c.Logger = watermill.NopLogger{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.DispatchLimit == 0 {
		c.DispatchLimit = DispatchLimitDefault
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if len(c.Effects) == 0 {
		errs = append(errs, errors.New("Effects is empty: the relay needs an effect per outbox row kind"))
	}
	for _, kind := range slices.Sorted(maps.Keys(c.Effects)) {
		if kind == "" {
			errs = append(errs, errors.New(`Effects has the empty kind ""`))
		}
		if c.Effects[kind] == nil {
			errs = append(errs, fmt.Errorf("Effects[%q] is nil", kind))
		}
	}
	if c.Concurrency < 1 || c.Concurrency > ConcurrencyMax {
		errs = append(errs, fmt.Errorf("Concurrency is %d, must be in [1, %d]", c.Concurrency, ConcurrencyMax))
	}
	if c.Lease < time.Millisecond {
		errs = append(errs, fmt.Errorf("Lease is %s, must be at least 1ms", c.Lease))
	}
	if c.EffectTimeout <= 0 || c.EffectTimeout >= c.Lease {
		errs = append(errs, fmt.Errorf("EffectTimeout is %s, must be positive and shorter than Lease (%s): "+
			"an effect still running when its lease lapses may be called again by another relay", c.EffectTimeout, c.Lease))
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("PollInterval is %s, must be positive", c.PollInterval))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("MaxAttempts is %d, must be at least 1", c.MaxAttempts))
	}
	if c.RetryInitialInterval <= 0 || c.RetryMaxInterval < c.RetryInitialInterval {
		errs = append(errs, fmt.Errorf("RetryInitialInterval %s and RetryMaxInterval %s: want 0 < initial <= max",
			c.RetryInitialInterval, c.RetryMaxInterval))
	}
	if c.StopTimeout < 0 {
		errs = append(errs, fmt.Errorf("StopTimeout is %s, must not be negative", c.StopTimeout))
	}
	if c.RecordTimeout <= 0 {
		errs = append(errs, fmt.Errorf("RecordTimeout is %s, must be positive", c.RecordTimeout))
	}
	if c.DoneRetention <= 0 {
		errs = append(errs, fmt.Errorf("DoneRetention is %s, must be positive", c.DoneRetention))
	}
	if c.PruneInterval <= 0 {
		errs = append(errs, fmt.Errorf("PruneInterval is %s, must be positive", c.PruneInterval))
	}
	if c.DispatchLimit < 1 || c.DispatchLimit > 10*ConcurrencyMax {
		errs = append(errs, fmt.Errorf("DispatchLimit is %d, must be in [1, %d]", c.DispatchLimit, 10*ConcurrencyMax))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// Outcome is what the relay recorded for one row.
type Outcome string

const (
	// OutcomeDone: the effect returned nil and the row is done.
	OutcomeDone Outcome = "done"
	// OutcomeRetry: the effect failed and the row is pending again, due
	// after Report.Delay.
	OutcomeRetry Outcome = "retry"
	// OutcomeDead: the effect failed permanently, or for the
	// Config.MaxAttempts-th time, and the row is dead.
	OutcomeDead Outcome = "dead"
	// OutcomeClaimLost: the row was no longer claimed by this relay when
	// its outcome was to be recorded (its lease lapsed and another relay
	// claimed it, or an operator moved it); nothing was written.
	OutcomeClaimLost Outcome = "claim_lost"
	// OutcomeUnrecorded: the outcome could not be recorded (a database
	// error, in Report.RecordErr) or is unknown (the relay stopped
	// mid-effect). The row stays claimed until its lease lapses, then it is
	// carried out again with the same idempotency key.
	OutcomeUnrecorded Outcome = "unrecorded"
)

// Report describes one row carried out by a relay.
type Report struct {
	// Row is the row as claimed: Attempts counts this attempt (1 for the
	// first), Row.Claim is the claim the relay held. For a row carried out
	// by direct dispatch, Claim.Token is empty, Claim.ID is 0 and
	// Claim.Until is the end of the row's hold; Row.ID is 0 until the
	// outcome is recorded (the relay never read the row), then the id the
	// record returned.
	Row stores.OutboxRow
	// Outcome is what was recorded.
	Outcome Outcome
	// Err is the effect's error; nil when it succeeded (also for
	// OutcomeClaimLost and OutcomeUnrecorded, whose effect may have
	// succeeded).
	Err error
	// RecordErr is why the outcome was not recorded (OutcomeUnrecorded).
	RecordErr error
	// Delay is the backoff before the next attempt (OutcomeRetry).
	Delay time.Duration
	// Claimed is when the row was claimed; Started and Finished bracket
	// the effect call (zero when it was not called); Recorded is when the
	// outcome was recorded (zero if it was not).
	Claimed, Started, Finished, Recorded time.Time
}

// Relay carries out outbox rows: it claims due rows under a lease in a
// short statement, calls each row's effect outside any transaction with
// the row's idempotency key, and records the outcome in another short
// statement, guarded by the claim (docs/design.md invariant 7). Any number of
// relays, in one process or many, may run on one store: a row is claimed
// by one at a time. A Relay is safe for concurrent use; Run runs once at a
// time.
type Relay struct {
	store   stores.OutboxStore
	cfg     Config
	kinds   []string
	running atomic.Bool
	// accepting: Run takes dispatched rows (HoldOutbox may say yes).
	accepting atomic.Bool
	// taking: Run receives hand-overs (DispatchOutbox sends them), from
	// its start until, stopping, it released the rows of the reservations
	// it granted.
	taking atomic.Bool
	// held counts the rows held for direct dispatch: reserved, waiting or
	// in flight; at most Config.DispatchLimit.
	held atomic.Int64
	// dispatched carries rows from DispatchOutbox to Run; its buffer
	// (DispatchLimit) holds every hand-over the held rows can make, so a
	// send never blocks.
	dispatched chan []ackgap.OutboxEntry
}

// New returns a Relay on store; cfg is required because Effects is. When
// the store can listen (stores.OutboxStore.ListenOutbox; pgxstore can), Run
// is woken right after commits that added rows; wrap the store with
// [PollOnly] to poll only. It does not touch the database. It returns an
// error wrapping "invalid config" that names every bad field.
func New(store stores.OutboxStore, cfg *Config) (*Relay, error) {
	if cfg == nil {
		return nil, errors.New("invalid config: Config is nil: Effects is required")
	}
	if store == nil {
		return nil, errors.New("invalid config: store is nil")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	r := &Relay{store: store, cfg: c, kinds: slices.Sorted(maps.Keys(c.Effects)),
		dispatched: make(chan []ackgap.OutboxEntry, c.DispatchLimit)}
	return r, nil
}

// PollOnly returns store with listening turned off: its ListenOutbox
// returns an error wrapping errors.ErrUnsupported, so a relay on it polls
// every Config.PollInterval and is never woken.
func PollOnly(store stores.OutboxStore) stores.OutboxStore {
	return pollOnly{store}
}

type pollOnly struct{ stores.OutboxStore }

func (pollOnly) ListenOutbox(context.Context, *stores.OutboxListenParams) error {
	return fmt.Errorf("outbox: listening turned off by PollOnly: %w", errors.ErrUnsupported)
}

// Run carries out due rows until ctx ends, then returns nil. It claims as
// many due rows as it has free slots (Config.Concurrency) and calls their
// effects concurrently. While claims come back full (a backlog), it claims
// again as soon as half its slots are free, so one claim statement serves
// several rows; otherwise it claims when woken by the store
// (stores.OutboxStore.ListenOutbox), when a retried row comes due, or every
// Config.PollInterval. It also deletes
// rows done more than Config.DoneRetention ago, every
// Config.PruneInterval. Claim and recording errors are logged, not
// returned: a database that is briefly unreachable does not stop the
// relay.
//
// When ctx ends, Run stops claiming and waits up to Config.StopTimeout for
// the effects in flight to return and their outcomes to be recorded; then
// it cancels their contexts and waits for them to return. A row whose
// effect was cut short stays claimed, and its lease lapses. Rows handed
// over by direct dispatch whose effect had not started are not called:
// Run releases their holds (one statement per OutboxClaimLimitMax rows,
// each bounded by RecordTimeout), so any relay claims them at once; only
// if that fails do they wait for their hold (Config.Lease from when their
// handler added them) to lapse. The same goes for rows held before the
// stop whose transaction commits during it (a handler in flight when a
// router and its relay stop on one signal): Run waits for them, within
// the StopTimeout that started when ctx ended, and releases them too;
// rows committed later wait for their hold. Run returns only once every goroutine it
// started has ended. It returns ErrAlreadyRunning if the relay is running
// already.
func (r *Relay) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer r.running.Store(false)

	wake := make(chan struct{}, 1)
	bgCtx, stopBG := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() {
		stopBG()
		bg.Wait()
	}()
	bg.Go(func() { r.listen(bgCtx, wake) })
	bg.Go(func() { r.prune(bgCtx) })

	// Effects run on a context that outlives ctx by up to StopTimeout.
	workCtx, hardStop := context.WithCancel(context.WithoutCancel(ctx))
	defer hardStop()
	var workers sync.WaitGroup
	// One entry per effect that ended: a retry's due time, or zero. Its
	// buffer holds one per slot, so a worker never waits for the loop.
	finished := make(chan time.Time, r.cfg.Concurrency)
	inflight := 0
	// Effects run on worker goroutines that stay, at most Concurrency,
	// started as the slots are first used: a goroutine per effect grew
	// its stack through the HTTP client on every call (runtime.newstack
	// was 3% of the process's CPU in the SQS modes benchmark).
	jobs := make(chan func() time.Time)
	nworkers := 0
	worker := func(run func() time.Time) {
		for ; run != nil; run = <-jobs {
			finished <- run()
		}
	}
	// Outcomes of held rows are coming while rows are held: reserved by a
	// transaction in progress, dispatched, or carried out.
	rec := r.startRecorder(ctx, func() bool { return r.held.Load() > 0 })
	r.taking.Store(true)
	r.accepting.Store(true)
	var queue []ackgap.OutboxEntry // dispatched rows waiting for a slot
	defer func() {
		stopping := time.Now()
		r.accepting.Store(false)
		close(jobs) // the idle workers return; the busy ones after their effect
		r.drain(&workers, hardStop)
		rec.stop()
		// Rows handed over but never started, and those of reservations
		// granted before the stop whose transactions commit while it lasts
		// (a handler still in flight): release their holds, so that any
		// relay claims them now rather than after a Lease. Every
		// reservation ends with a DispatchOutbox; with the effects done,
		// held counts the queue and the reservations not handed over yet.
		wait := time.NewTimer(max(r.cfg.StopTimeout-time.Since(stopping), 0))
		tick := time.NewTicker(5 * time.Millisecond)
	waiting:
		for r.held.Load() > int64(len(queue)) {
			select {
			case rows := <-r.dispatched:
				queue = append(queue, rows...)
			case <-tick.C:
			case <-wait.C:
				break waiting
			}
		}
		wait.Stop()
		tick.Stop()
		r.taking.Store(false)
		for {
			select {
			case rows := <-r.dispatched:
				queue = append(queue, rows...)
				continue
			default:
			}
			break
		}
		r.release(context.WithoutCancel(ctx), queue)
		r.held.Add(-int64(len(queue)))
	}()
	// A slot is taken while an effect runs; its outcome is recorded after
	// the slot is free again (see recorder).
	start := func(run func() time.Time) {
		inflight++
		select {
		case jobs <- run: // an idle worker took it
			return
		default:
		}
		if nworkers < r.cfg.Concurrency {
			nworkers++
			workers.Go(func() { worker(run) })
			return
		}
		// Every worker is started and a slot is free: one has finished its
		// effect and is about to take the next.
		jobs <- run
	}

	poll := time.NewTimer(0)
	defer poll.Stop()
	nextPoll := time.Now()
	more := true // claim at once
	for {
		// Dispatched rows first: they are committed and waiting in memory.
		for len(queue) > 0 && inflight < r.cfg.Concurrency {
			row := queue[0]
			queue = queue[1:]
			start(func() time.Time { return r.carryOutHeld(workCtx, row, rec) })
		}
		// Claim for at least half the slots at a time: a claim per freed
		// slot would cost a statement (and a commit) per row.
		if more && len(queue) == 0 && r.cfg.Concurrency-inflight >= max(1, r.cfg.Concurrency/2) {
			want := r.cfg.Concurrency - inflight
			rows, err := r.claim(ctx, want)
			if err != nil && ctx.Err() == nil {
				r.cfg.Logger.Error("outbox relay: claim failed", err, nil)
			}
			claimed := r.cfg.Now()
			for _, row := range rows {
				start(func() time.Time { return r.carryOut(workCtx, row, claimed, rec, nil) })
			}
			// A full claim means more rows may be due: claim again as soon as
			// a slot is free. Otherwise wait for a wake-up or the poll.
			more = err == nil && len(rows) == want
			nextPoll = time.Now().Add(r.cfg.PollInterval)
			poll.Reset(r.cfg.PollInterval)
		}
		select {
		case <-ctx.Done():
			return nil
		case due := <-finished:
			inflight--
			if !due.IsZero() && due.Before(nextPoll) {
				nextPoll = due
				poll.Reset(max(time.Until(due), 0))
			}
		case rows := <-r.dispatched:
			queue = append(queue, rows...)
		case <-wake:
			more = true
		case <-poll.C:
			more = true
		}
	}
}

// releaseNote is the last error a released row keeps.
const releaseNote = "released unstarted by a stopping relay"

// release makes held rows whose effect was never started due now, for
// any relay to claim (SettleOutboxIfClaimedOrHeld to pending, no delay: this
// counts one attempt), at most OutboxClaimLimitMax per statement, each
// statement bounded by RecordTimeout. A row whose release fails keeps its
// hold until it lapses; the failure is logged.
func (r *Relay) release(ctx context.Context, rows []ackgap.OutboxEntry) {
	for chunk := range slices.Chunk(rows, stores.OutboxClaimLimitMax) {
		p := &stores.OutboxSettleParams{Rows: make([]stores.OutboxSettlement, 0, len(chunk))}
		seen := make(map[string]bool, len(chunk))
		for _, e := range chunk {
			if seen[e.IdempotencyKey] {
				continue // one settlement per key and statement
			}
			seen[e.IdempotencyKey] = true
			p.Rows = append(p.Rows, stores.OutboxSettlement{IdempotencyKey: e.IdempotencyKey, HeldUntil: e.AvailableAt,
				State: stores.OutboxPending, LastError: releaseNote})
		}
		rctx, cancel := context.WithTimeout(ctx, r.cfg.RecordTimeout)
		_, err := r.store.SettleOutboxIfClaimedOrHeld(rctx, p)
		cancel()
		if err != nil {
			r.cfg.Logger.Error("outbox relay: releasing unstarted dispatched rows failed; they are claimed when their hold lapses", err,
				watermill.LogFields{"rows": len(p.Rows)})
		}
	}
}

// HoldOutbox implements middleware.Dispatcher: it reserves room for one
// row while Run runs and fewer than Config.DispatchLimit rows are held,
// and returns the hold's end: now + Config.Lease, by this process's clock
// (a relay elsewhere claims the row once the database's clock passes it,
// so clock skew between the two shortens or lengthens the hold).
func (r *Relay) HoldOutbox() (time.Time, bool) {
	for {
		if !r.accepting.Load() {
			return time.Time{}, false
		}
		n := r.held.Load()
		if n >= int64(r.cfg.DispatchLimit) {
			return time.Time{}, false
		}
		if r.held.CompareAndSwap(n, n+1) {
			return r.cfg.Now().Add(r.cfg.Lease), true
		}
	}
}

// DispatchOutbox implements middleware.Dispatcher: it hands rows (of a
// committed transaction, each held by HoldOutbox) to Run, which calls
// their effects ahead of claimed rows, and ends released reservations. It
// never blocks. Rows that reach a stopping Run are released (due at once,
// see Run); rows that reach a relay that stopped wait for their hold to
// lapse, then any relay claims them.
func (r *Relay) DispatchOutbox(rows []ackgap.OutboxEntry, released int) {
	r.held.Add(-int64(released))
	if len(rows) == 0 {
		return
	}
	if r.taking.Load() {
		select {
		case r.dispatched <- rows:
			return
		default: // cannot happen while held rows bound the hand-overs
		}
	}
	r.held.Add(-int64(len(rows)))
}

// RunOnce claims up to Config.Concurrency due rows, carries them out
// concurrently and returns how many it claimed, whatever their outcomes
// (see Config.Observer for those). Effects run on ctx: if it ends
// mid-effect, that row's outcome is not recorded and its lease lapses. It
// suits tests and jobs run by a scheduler; Run is the long-running form.
// RunOnce may run alongside Run.
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	rows, err := r.claim(ctx, r.cfg.Concurrency)
	if err != nil {
		return 0, err
	}
	claimed := r.cfg.Now()
	rec := r.startRecorder(ctx, nil)
	var wg sync.WaitGroup
	for _, row := range rows {
		wg.Go(func() { r.carryOut(ctx, row, claimed, rec, nil) })
	}
	wg.Wait()
	rec.stop()
	return len(rows), nil
}

func (r *Relay) claim(ctx context.Context, n int) ([]stores.OutboxRow, error) {
	res, err := r.store.ClaimOutbox(ctx, &stores.OutboxClaimParams{Limit: n, Lease: r.cfg.Lease, Kinds: r.kinds})
	if err != nil {
		return nil, fmt.Errorf("outbox relay: claim: %w", err)
	}
	return res.Rows, nil
}

// drain waits for the workers, up to StopTimeout; then it cancels their
// contexts and waits for them to return.
func (r *Relay) drain(workers *sync.WaitGroup, hardStop context.CancelFunc) {
	done := make(chan struct{})
	go func() {
		workers.Wait()
		close(done)
	}()
	t := time.NewTimer(r.cfg.StopTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		hardStop()
		<-done
	}
}

// listen runs the store's listener, restarting it after a failure, and
// turns its notifications into wake-ups (coalesced: one pending wake-up
// is enough). It returns at once for a store that cannot listen
// (errors.ErrUnsupported): the relay polls.
func (r *Relay) listen(ctx context.Context, wake chan<- struct{}) {
	notify := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	for {
		err := r.store.ListenOutbox(ctx, &stores.OutboxListenParams{Notify: notify})
		if ctx.Err() != nil || errors.Is(err, errors.ErrUnsupported) {
			return
		}
		r.cfg.Logger.Error("outbox relay: listening for new rows failed; polling until it is back", err, nil)
		t := time.NewTimer(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// prune deletes old done rows now and every PruneInterval until ctx ends.
func (r *Relay) prune(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := r.PruneDone(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("outbox relay: pruning done rows failed", err, nil)
		}
		t.Reset(r.cfg.PruneInterval)
	}
}

// carryOut calls row's effect and hands the outcome to rec, which
// records it (and then logs it and gives it to the Observer) after
// carryOut returned: the effect's slot is free once the call is. It
// returns when a retried row is due again, zero for other outcomes. ctx is
// the work context: when it is cancelled (the relay's hard stop)
// mid-effect, the outcome is left unrecorded.
//
// effectDone, when not nil, is called once the effect returned (or was
// not called), before its outcome is handed to rec.
func (r *Relay) carryOut(ctx context.Context, row stores.OutboxRow, claimed time.Time, rec *recorder, effectDone func()) (retryAt time.Time) {
	rep := &Report{Row: row, Claimed: claimed}
	rec.enter()
	finished := func() {
		if effectDone != nil {
			effectDone()
		}
	}
	if row.Attempts > r.cfg.MaxAttempts {
		// Earlier attempts ended without an outcome: do not call an effect
		// that may be what crashes the relay.
		rep.Err = fmt.Errorf("%w: claimed %d times, the limit is %d, and no earlier attempt recorded an outcome (relays crashed, stopped or could not record)",
			ErrAttemptsExhausted, row.Attempts, r.cfg.MaxAttempts)
		finished()
		rec.record(rep, OutcomeDead)
		return time.Time{}
	}
	effectCtx, cancel := context.WithTimeout(ctx, r.cfg.EffectTimeout)
	rep.Started = r.cfg.Now()
	rep.Err = call(effectCtx, r.cfg.Effects[row.Kind], row)
	rep.Finished = r.cfg.Now()
	cancel()
	finished()
	switch err := rep.Err; {
	case err != nil && ctx.Err() != nil:
		rep.Outcome, rep.RecordErr = OutcomeUnrecorded, fmt.Errorf("relay stopped mid-effect, the lease will lapse: %w", ctx.Err())
		rec.leave()
		r.report(ctx, rep)
	case err == nil:
		rec.record(rep, OutcomeDone)
	case ackgap.IsPermanent(err):
		rec.record(rep, OutcomeDead)
	case row.Attempts >= r.cfg.MaxAttempts:
		rep.Err = fmt.Errorf("%w (%d of %d): %w", ErrAttemptsExhausted, row.Attempts, r.cfg.MaxAttempts, err)
		rec.record(rep, OutcomeDead)
	default:
		rep.Delay = r.backoff(row.Attempts, err)
		rec.record(rep, OutcomeRetry)
		return time.Now().Add(rep.Delay)
	}
	return time.Time{}
}

// report logs rep and gives it to the Observer, once its outcome is
// final.
func (r *Relay) report(ctx context.Context, rep *Report) {
	r.log(rep)
	if r.cfg.Observer != nil {
		r.cfg.Observer(ctx, rep)
	}
}

// carryOutHeld carries out a row handed over by direct dispatch: as a
// claimed row, whose claim is the row's hold (no token: its outcome is
// recorded with SettleOutboxIfClaimedOrHeld, by idempotency key; Report.Row.ID
// is the id that statement returns, 0 until the outcome is recorded and
// when it could not be). A row whose hold ends before an effect call could finish is
// left for the relay that claims it once the hold lapsed. It returns what
// carryOut does.
// The row stops counting as held (Relay.held) once its effect returned,
// before its outcome is handed to rec, so that rec's wait for outcomes
// still coming (recorder.gather) does not wait for this one.
func (r *Relay) carryOutHeld(ctx context.Context, e ackgap.OutboxEntry, rec *recorder) time.Time {
	now := r.cfg.Now()
	if now.Add(r.cfg.EffectTimeout).After(e.AvailableAt) {
		r.held.Add(-1)
		r.cfg.Logger.Info("outbox relay: dispatched row waited too long; a relay claims it when its hold lapses",
			watermill.LogFields{"kind": e.Kind, "idempotency_key": e.IdempotencyKey, "held_until": e.AvailableAt})
		return time.Time{}
	}
	row := stores.OutboxRow{OutboxEntry: e, State: stores.OutboxPending, Attempts: 1, Claim: stores.OutboxClaim{Until: e.AvailableAt}}
	return r.carryOut(ctx, row, now, rec, func() { r.held.Add(-1) })
}

// call runs effect, turning a panic into an error.
func call(ctx context.Context, effect Effect, row stores.OutboxRow) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("outbox effect for kind %q panicked: %v", row.Kind, p)
		}
	}()
	return effect(ctx, row)
}

// backoff returns the delay before attempt+1: RetryInitialInterval
// doubled per attempt, capped at RetryMaxInterval, ±RetryJitter; at least
// what a RetryAfter error asked for (capped at RetryAfterMax).
func (r *Relay) backoff(attempt int, err error) time.Duration {
	d := r.cfg.RetryInitialInterval
	for i := 1; i < attempt && d < r.cfg.RetryMaxInterval; i++ {
		d *= 2
	}
	d = min(d, r.cfg.RetryMaxInterval)
	d = time.Duration(float64(d) * (1 + RetryJitter*(2*rand.Float64()-1)))
	d = min(d, r.cfg.RetryMaxInterval)
	if after, ok := retryAfterOf(err); ok {
		d = max(d, min(after, RetryAfterMax))
	}
	return d
}

// lastError is err's text as kept on a row: at most LastErrorMaxBytes of
// valid UTF-8 without NUL bytes (PostgreSQL text refuses both).
func lastError(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > LastErrorMaxBytes {
		s = s[:LastErrorMaxBytes]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

func (r *Relay) log(rep *Report) {
	fields := watermill.LogFields{
		"outbox_id": rep.Row.ID, "kind": rep.Row.Kind, "idempotency_key": rep.Row.IdempotencyKey,
		"attempt": rep.Row.Attempts, "outcome": string(rep.Outcome),
	}
	switch rep.Outcome {
	case OutcomeUnrecorded:
		r.cfg.Logger.Error("outbox relay: outcome not recorded; the row is carried out again when its lease lapses",
			errors.Join(rep.RecordErr, rep.Err), fields)
	case OutcomeDead:
		r.cfg.Logger.Error("outbox relay: row is dead", rep.Err, fields)
	case OutcomeRetry:
		fields["delay"] = rep.Delay
		fields["error"] = rep.Err
		r.cfg.Logger.Info("outbox relay: effect failed, will retry", fields)
	case OutcomeClaimLost:
		r.cfg.Logger.Info("outbox relay: claim lost before recording (lease lapsed?)", fields)
	default:
		r.cfg.Logger.Trace("outbox relay: done", fields)
	}
}
