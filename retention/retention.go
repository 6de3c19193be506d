package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ackgap/ackgap/stores"
)

// Defaults of [Config].
const (
	// RetentionDefault is how long inbox rows are kept: 15 days, SQS's
	// longest MessageRetentionPeriod (14 days, 1,209,600 s) plus 1 day of
	// slack for time a message spends in a dead-letter queue before it is
	// redriven.
	RetentionDefault = 15 * 24 * time.Hour
	// RedeliveryWindowDefault is the longest time the broker could still
	// redeliver or replay a message: 4 days, SQS's default
	// MessageRetentionPeriod (345,600 s). Kafka's default topic retention
	// (log.retention.hours=168) is 7 days: a Kafka deployment sets
	// RedeliveryWindow to its topic's retention.ms.
	RedeliveryWindowDefault = 4 * 24 * time.Hour
	// IntervalDefault is the time between two pruning rounds of Run.
	IntervalDefault = time.Hour
	// BatchSizeDefault is the most rows one PruneInbox call deletes, and so
	// the most rows one short delete transaction holds locked.
	BatchSizeDefault = stores.PruneLimitDefault
)

// Config configures a [Pruner]. Fields left zero take the default named in
// their doc; negative values are configuration errors.
type Config struct {
	// Retention is how long an inbox row is kept after it was first
	// received; rows received before Now() - Retention are deleted. It must
	// be at least RedeliveryWindow (docs/design.md invariant 8). Default
	// RetentionDefault (15 days).
	Retention time.Duration
	// RedeliveryWindow is the longest time the broker could still redeliver
	// or replay a message after it was first delivered: for SQS the queue's
	// MessageRetentionPeriod (plus the dead-letter queue's when messages
	// are redriven); for Kafka the topic's retention.ms, or the furthest
	// back a consumer group's offsets may be reset. It is not used to
	// prune, only to check Retention: a Retention shorter than it is a
	// configuration error. Default RedeliveryWindowDefault (4 days, SQS's
	// default retention).
	RedeliveryWindow time.Duration
	// Interval is the time Run waits after a round before the next one.
	// Default IntervalDefault (1 h).
	Interval time.Duration
	// BatchSize is the most rows one PruneInbox call deletes; PruneOnce
	// calls it until a batch deletes fewer. Default BatchSizeDefault (1000).
	BatchSize int
	// Consumer limits pruning to the inbox rows of one consumer name.
	// Default "": all consumers.
	Consumer string
	// Now returns the current time; the cutoff is Now() - Retention.
	// Tests inject a clock here. Default time.Now.
	Now func() time.Time
	// OnPrune, when set, is called by Run after every round with the rows
	// the round deleted and its error (nil on success), from Run's
	// goroutine: a slow OnPrune delays the next round. Use it to log and
	// count. Default nil: nothing is reported.
	OnPrune func(deleted int64, err error)
}

// WithDefaults returns a copy of c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Retention == 0 {
		c.Retention = RetentionDefault
	}
	if c.RedeliveryWindow == 0 {
		c.RedeliveryWindow = RedeliveryWindowDefault
	}
	if c.Interval == 0 {
		c.Interval = IntervalDefault
	}
	if c.BatchSize == 0 {
		c.BatchSize = BatchSizeDefault
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Retention <= 0 {
		errs = append(errs, fmt.Errorf("Retention is %s, must be positive", c.Retention))
	}
	if c.RedeliveryWindow <= 0 {
		errs = append(errs, fmt.Errorf("RedeliveryWindow is %s, must be positive", c.RedeliveryWindow))
	}
	if c.Retention > 0 && c.RedeliveryWindow > 0 && c.Retention < c.RedeliveryWindow {
		errs = append(errs, fmt.Errorf("Retention %s is shorter than RedeliveryWindow %s (docs/design.md invariant 8: "+
			"an inbox row pruned while the broker can still redeliver lets a duplicate through)",
			days(c.Retention), days(c.RedeliveryWindow)))
	}
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("Interval is %s, must be positive", c.Interval))
	}
	if c.BatchSize <= 0 {
		errs = append(errs, fmt.Errorf("BatchSize is %d, must be at least 1", c.BatchSize))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// days formats d with its length in days, the unit broker retention is
// usually thought of in: "72h0m0s (3 days)".
func days(d time.Duration) string {
	n := d.Hours() / 24
	if n == 1 {
		return fmt.Sprintf("%s (1 day)", d)
	}
	return fmt.Sprintf("%s (%.4g days)", d, n)
}

// Pruner deletes inbox rows older than its Config.Retention. It is safe for
// concurrent use, and any number of Pruners, in one process or many, may
// prune one store at once: see [Pruner.PruneOnce].
type Pruner struct {
	store stores.Operator
	cfg   Config
}

// New returns a Pruner on store; cfg nil means all defaults. It does not
// touch the database. It returns an error wrapping "invalid config" that
// names every bad field, among them a Retention shorter than
// RedeliveryWindow.
func New(store stores.Operator, cfg *Config) (*Pruner, error) {
	if store == nil {
		return nil, errors.New("invalid config: store is nil")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &Pruner{store: store, cfg: c}, nil
}

// PruneOnce deletes every inbox row (of Config.Consumer, or of all
// consumers) first received before Now() - Retention, and returns how many
// it deleted. The cutoff is taken once, at the start. It calls
// store.PruneInbox with a limit of BatchSize until a call deletes fewer
// rows, so each delete is a short transaction and locks at most BatchSize
// rows.
//
// Several PruneOnce calls at once, from one Pruner or from many instances,
// are safe and delete each row once: PruneInbox skips rows another pruner
// is deleting instead of waiting for them (PostgreSQL: FOR UPDATE SKIP
// LOCKED; SQLite has one writer, so pruners take turns). A pruner that
// meets only locked rows stops early; the pruner holding them deletes them.
//
// On an error, or when ctx ends between batches, it returns the rows
// deleted so far with the error; the rest are deleted by the next call.
func (p *Pruner) PruneOnce(ctx context.Context) (int64, error) {
	params := &stores.PruneInboxParams{
		Before:   p.cfg.Now().Add(-p.cfg.Retention),
		Consumer: p.cfg.Consumer,
		Limit:    p.cfg.BatchSize,
	}
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("retention: prune inbox: %w", err)
		}
		res, err := p.store.PruneInbox(ctx, params)
		if err != nil {
			return total, fmt.Errorf("retention: prune inbox: %w", err)
		}
		total += res.Deleted
		if res.Deleted < int64(p.cfg.BatchSize) {
			return total, nil
		}
	}
}

// Run prunes right away, then again Interval after each round ends,
// until ctx is done; then it returns nil. It starts no goroutine: it
// returns when ctx is done, after the round in progress (whose database
// calls honour ctx) ends.
//
// An error in a round does not stop Run: it is passed to OnPrune with the
// rows the round deleted, and the next round runs after Interval, so a
// database that is briefly unreachable does not end the job. A round cut
// short because ctx ended is not reported. Run one Pruner per process (or
// per consumer); running it on every instance of a service is safe, see
// [Pruner.PruneOnce].
func (p *Pruner) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		deleted, err := p.PruneOnce(ctx)
		if err != nil && ctx.Err() != nil {
			return nil
		}
		if p.cfg.OnPrune != nil {
			p.cfg.OnPrune(deleted, err)
		}
		timer.Reset(p.cfg.Interval)
	}
}
