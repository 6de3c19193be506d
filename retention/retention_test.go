package retention_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/retention"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// now is the injected clock of every Pruner in these tests; rows are
// received relative to it.
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

const day = 24 * time.Hour

// bundle is a migrated store seen through the parts the tests need.
type bundle struct {
	store stores.Operator
	// tryInsert commits an inbox row for (consumer, eventID) received at
	// at; it is safe to call from any goroutine.
	tryInsert func(ctx context.Context, consumer, eventID string, at time.Time) error
	// duplicate reports whether the inbox still holds (consumer, eventID):
	// it begins an inbox transaction for the key and rolls it back.
	duplicate func(t *testing.T, consumer, eventID string) bool
}

// newBundle is the bundle of s; op is s as a stores.Operator.
func newBundle[TTx any](s stores.Store[TTx], op stores.Operator) *bundle {
	return &bundle{
		store: op,
		tryInsert: func(ctx context.Context, consumer, eventID string, at time.Time) error {
			begun, err := s.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: consumer, EventID: eventID, Now: at})
			if err != nil {
				return err
			}
			if begun.Duplicate { // an eager store knows at once
				return fmt.Errorf("%s/%s inserted twice", consumer, eventID)
			}
			res, err := s.InboxVerdictTx(ctx, begun.Tx)
			if err != nil {
				_ = s.RollbackTx(ctx, begun.Tx)
				return err
			}
			if res.Duplicate {
				return fmt.Errorf("%s/%s inserted twice", consumer, eventID)
			}
			return s.CommitTx(ctx, res.Tx)
		},
		duplicate: func(t *testing.T, consumer, eventID string) bool {
			ctx := context.Background()
			begun, err := s.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: consumer, EventID: eventID, Now: now})
			require.NoError(t, err)
			if begun.Duplicate { // an eager store knows at once
				return true
			}
			res, err := s.InboxVerdictTx(ctx, begun.Tx)
			require.NoError(t, err)
			if !res.Duplicate {
				require.NoError(t, s.RollbackTx(ctx, res.Tx))
			}
			return res.Duplicate
		},
	}
}

// insert commits an inbox row for (consumer, eventID) received at at.
func (b *bundle) insert(t *testing.T, consumer, eventID string, at time.Time) {
	t.Helper()
	require.NoError(t, b.tryInsert(context.Background(), consumer, eventID, at))
}

func setupPostgres(t *testing.T) *bundle {
	t.Helper()
	pool, _ := testdb.Schema(t, 0)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	return newBundle(store, store)
}

func setupSQLite(t *testing.T) *bundle {
	t.Helper()
	store, err := sqlitestore.Open(context.Background(), testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	_, err = store.Migrate(context.Background(), &stores.MigrateParams{})
	require.NoError(t, err)
	return newBundle(store, store)
}

// forEachStore runs fn as a parallel subtest on a fresh PostgreSQL schema
// and on a fresh SQLite file.
func forEachStore(t *testing.T, fn func(t *testing.T, b *bundle)) {
	for _, s := range []struct {
		name  string
		setup func(*testing.T) *bundle
	}{{"postgres", setupPostgres}, {"sqlite", setupSQLite}} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			fn(t, s.setup(t))
		})
	}
}

func newPruner(t *testing.T, store stores.Operator, cfg retention.Config) *retention.Pruner {
	t.Helper()
	cfg.Now = clock
	p, err := retention.New(store, &cfg)
	require.NoError(t, err)
	return p
}

// countingPruner counts the PruneInbox calls it passes to the real store
// and fails the first failFirst of them.
type countingPruner struct {
	stores.Operator
	calls     atomic.Int64
	failFirst int64
}

var errTransient = errors.New("transient: connection reset")

func (c *countingPruner) PruneInbox(ctx context.Context, p *stores.PruneInboxParams) (*stores.PruneInboxResult, error) {
	if c.calls.Add(1) <= c.failFirst {
		return nil, errTransient
	}
	return c.Operator.PruneInbox(ctx, p)
}

// nopPruner is a store for tests that never reach it (only PruneInbox is
// implemented).
type nopPruner struct{ stores.Operator }

func (nopPruner) PruneInbox(context.Context, *stores.PruneInboxParams) (*stores.PruneInboxResult, error) {
	return &stores.PruneInboxResult{}, nil
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	in := retention.Config{Consumer: "billing"}
	c := in.WithDefaults()
	require.Equal(t, retention.RetentionDefault, c.Retention)
	require.Equal(t, 15*day, c.Retention)
	require.Equal(t, retention.RedeliveryWindowDefault, c.RedeliveryWindow)
	require.Equal(t, 345600*time.Second, c.RedeliveryWindow)
	require.Equal(t, retention.IntervalDefault, c.Interval)
	require.Equal(t, time.Hour, c.Interval)
	require.Equal(t, retention.BatchSizeDefault, c.BatchSize)
	require.Equal(t, 1000, c.BatchSize)
	require.Equal(t, "billing", c.Consumer)
	require.NotNil(t, c.Now)
	require.Nil(t, c.OnPrune)
	// The default retention covers SQS's longest retention period.
	require.GreaterOrEqual(t, c.Retention, 1209600*time.Second)

	require.Zero(t, in.Retention, "WithDefaults returns a copy")
	require.Nil(t, in.Now, "WithDefaults returns a copy")

	_, err := retention.New(nopPruner{}, nil)
	require.NoError(t, err)
	_, err = retention.New(nopPruner{}, &retention.Config{})
	require.NoError(t, err)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()

	t.Run("RetentionShorterThanRedeliveryWindow", func(t *testing.T) {
		t.Parallel()
		_, err := retention.New(nopPruner{}, &retention.Config{Retention: 3 * day})
		require.ErrorContains(t, err, "invalid config")
		require.ErrorContains(t, err, "Retention 72h0m0s (3 days)")
		require.ErrorContains(t, err, "RedeliveryWindow 96h0m0s (4 days)")
		require.ErrorContains(t, err, "invariant 8")
		require.ErrorContains(t, err, "lets a duplicate through")

		// Kafka's default topic retention against the default retention.
		_, err = retention.New(nopPruner{}, &retention.Config{RedeliveryWindow: 7 * day, Retention: 6 * day})
		require.ErrorContains(t, err, "invariant 8")
	})

	t.Run("RetentionEqualToRedeliveryWindow", func(t *testing.T) {
		t.Parallel()
		_, err := retention.New(nopPruner{}, &retention.Config{Retention: 7 * day, RedeliveryWindow: 7 * day})
		require.NoError(t, err)
	})

	t.Run("AllErrorsAtOnce", func(t *testing.T) {
		t.Parallel()
		_, err := retention.New(nopPruner{}, &retention.Config{
			Retention:        -time.Hour,
			RedeliveryWindow: -time.Hour,
			Interval:         -time.Second,
			BatchSize:        -1,
		})
		require.ErrorContains(t, err, "invalid config")
		require.ErrorContains(t, err, "Retention is -1h0m0s, must be positive")
		require.ErrorContains(t, err, "RedeliveryWindow is -1h0m0s, must be positive")
		require.ErrorContains(t, err, "Interval is -1s, must be positive")
		require.ErrorContains(t, err, "BatchSize is -1, must be at least 1")

		_, err = retention.New(nopPruner{}, &retention.Config{Retention: day, Interval: -1, BatchSize: -5})
		require.ErrorContains(t, err, "invariant 8")
		require.ErrorContains(t, err, "Interval is -1ns")
		require.ErrorContains(t, err, "BatchSize is -5")
	})

	t.Run("NilStore", func(t *testing.T) {
		t.Parallel()
		_, err := retention.New(nil, nil)
		require.ErrorContains(t, err, "invalid config: store is nil")
	})
}

func TestPruneOnceRemovesOnlyOldRows(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b *bundle) {
		cutoff := now.Add(-retention.RetentionDefault)
		b.insert(t, "billing", "old-1", cutoff.Add(-day))
		b.insert(t, "billing", "old-2", cutoff.Add(-time.Microsecond))
		b.insert(t, "billing", "at-cutoff", cutoff)
		b.insert(t, "billing", "recent", now.Add(-time.Hour))

		p := newPruner(t, b.store, retention.Config{})
		deleted, err := p.PruneOnce(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 2, deleted)

		require.False(t, b.duplicate(t, "billing", "old-1"), "old row pruned: the key is new again")
		require.False(t, b.duplicate(t, "billing", "old-2"), "old row pruned: the key is new again")
		require.True(t, b.duplicate(t, "billing", "at-cutoff"), "a row exactly Retention old is kept")
		require.True(t, b.duplicate(t, "billing", "recent"), "recent row kept")

		deleted, err = p.PruneOnce(context.Background())
		require.NoError(t, err)
		require.Zero(t, deleted)
	})
}

func TestPruneOnceBatches(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b *bundle) {
		old := now.Add(-retention.RetentionDefault - day)
		for i := range 25 {
			b.insert(t, "billing", fmt.Sprintf("old-%d", i), old.Add(time.Duration(i)*time.Second))
		}
		b.insert(t, "billing", "recent", now)

		counting := &countingPruner{Operator: b.store}
		p := newPruner(t, counting, retention.Config{BatchSize: 10})
		deleted, err := p.PruneOnce(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 25, deleted)
		require.EqualValues(t, 3, counting.calls.Load(), "batches of 10, 10 and 5")
		require.True(t, b.duplicate(t, "billing", "recent"))
		for i := range 25 {
			require.False(t, b.duplicate(t, "billing", fmt.Sprintf("old-%d", i)))
		}
	})
}

func TestPruneOnceConsumerScope(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b *bundle) {
		old := now.Add(-retention.RetentionDefault - day)
		for i := range 3 {
			b.insert(t, "billing", fmt.Sprintf("ev-%d", i), old)
			b.insert(t, "shipping", fmt.Sprintf("ev-%d", i), old)
		}

		billing := newPruner(t, b.store, retention.Config{Consumer: "billing"})
		deleted, err := billing.PruneOnce(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 3, deleted)
		require.False(t, b.duplicate(t, "billing", "ev-0"))
		require.True(t, b.duplicate(t, "shipping", "ev-0"), "another consumer's rows are kept")

		all := newPruner(t, b.store, retention.Config{})
		deleted, err = all.PruneOnce(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 3, deleted)
		require.False(t, b.duplicate(t, "shipping", "ev-0"))
	})
}

type report struct {
	deleted int64
	err     error
}

func TestRun(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b *bundle) {
		old := now.Add(-retention.RetentionDefault - day)
		for i := range 5 {
			b.insert(t, "billing", fmt.Sprintf("old-%d", i), old)
		}

		reports := make(chan report, 1)
		p := newPruner(t, b.store, retention.Config{
			OnPrune: func(deleted int64, err error) {
				select {
				case reports <- report{deleted, err}:
				default: // never block Run, even if the test failed
				}
			},
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()

		r := <-reports // the round at start; the next is an hour away
		require.NoError(t, r.err)
		require.EqualValues(t, 5, r.deleted)

		cancel()
		require.NoError(t, <-done, "Run returns nil when ctx is cancelled")
		require.False(t, b.duplicate(t, "billing", "old-0"))
	})
}

func TestRunContinuesAfterError(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, b *bundle) {
		old := now.Add(-retention.RetentionDefault - day)
		for i := range 5 {
			b.insert(t, "billing", fmt.Sprintf("old-%d", i), old)
		}

		flaky := &countingPruner{Operator: b.store, failFirst: 2}
		reports := make(chan report, 16)
		p := newPruner(t, flaky, retention.Config{
			Interval: time.Millisecond,
			OnPrune: func(deleted int64, err error) {
				select {
				case reports <- report{deleted, err}:
				default: // the test reads the first three only
				}
			},
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()

		for range 2 {
			r := <-reports
			require.ErrorIs(t, r.err, errTransient)
			require.Zero(t, r.deleted)
		}
		r := <-reports
		require.NoError(t, r.err)
		require.EqualValues(t, 5, r.deleted)

		cancel()
		require.NoError(t, <-done)
	})
}

func TestRunWithDoneContext(t *testing.T) {
	t.Parallel()
	p := newPruner(t, nopPruner{}, retention.Config{
		OnPrune: func(int64, error) { t.Error("OnPrune called for a round cut short by ctx") },
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, p.Run(ctx))

	deleted, err := p.PruneOnce(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, deleted)
}

// TestConcurrentPruners runs four Pruners, as four service instances
// would, over one PostgreSQL inbox: FOR UPDATE SKIP LOCKED lets them
// share the work without errors and without deleting a row twice.
func TestConcurrentPruners(t *testing.T) {
	t.Parallel()
	const rows, pruners = 2000, 4
	b := setupPostgres(t)

	old := now.Add(-retention.RetentionDefault - day)
	var wg sync.WaitGroup
	const writers = 8
	insertErrs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < rows; i += writers {
				err := b.tryInsert(context.Background(), fmt.Sprintf("consumer-%d", i%3), fmt.Sprintf("ev-%d", i),
					old.Add(time.Duration(i)*time.Millisecond))
				if err != nil {
					insertErrs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(insertErrs)
	for err := range insertErrs {
		require.NoError(t, err)
	}
	b.insert(t, "consumer-0", "recent", now)

	start := make(chan struct{})
	var total atomic.Int64
	errs := make(chan error, pruners)
	for range pruners {
		p := newPruner(t, b.store, retention.Config{BatchSize: 50})
		wg.Go(func() {
			<-start
			deleted, err := p.PruneOnce(context.Background())
			total.Add(deleted)
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, rows, total.Load())

	deleted, err := newPruner(t, b.store, retention.Config{}).PruneOnce(context.Background())
	require.NoError(t, err)
	require.Zero(t, deleted, "nothing old is left")
	require.True(t, b.duplicate(t, "consumer-0", "recent"))
	require.False(t, b.duplicate(t, "consumer-1", "ev-1"))
}

// The config error names one day in the singular (issue 25).
func TestNewOneDaySingular(t *testing.T) {
	_, err := retention.New(nopPruner{}, &retention.Config{Retention: 12 * time.Hour, RedeliveryWindow: 24 * time.Hour})
	require.ErrorContains(t, err, "shorter than RedeliveryWindow 24h0m0s (1 day)")
}
