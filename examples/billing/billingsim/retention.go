package billingsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/retention"
	"github.com/ackgap/ackgap/stores"
)

// pruner is the demo's inbox pruner: retention.New(...).Run in a
// goroutine, as a service built from the README runs it beside its relays.
type pruner struct {
	retention time.Duration
	cancel    context.CancelFunc
	done      chan error

	mu       sync.Mutex
	n        int
	busy     int
	total    int64
	firstErr error
}

// startPruner starts a pruner on store with retention's defaults (a 4-day
// redelivery window, SQS's default MessageRetentionPeriod, and a 15-day
// retention). It runs until stop.
func startPruner(ctx context.Context, store stores.Operator) (*pruner, error) {
	pr := &pruner{done: make(chan error, 1)}
	p, err := retention.New(store, &retention.Config{
		OnPrune: func(deleted int64, err error) {
			pr.mu.Lock()
			defer pr.mu.Unlock()
			pr.n++
			pr.total += deleted
			switch {
			case errors.Is(err, ackgap.ErrStoreUnavailable):
				// A busy database (SQLite's SQLITE_BUSY while the
				// routers and relays write): Run tries again next
				// round, as in a service. Overload is no failure.
				pr.busy++
			case err != nil && pr.firstErr == nil:
				pr.firstErr = err
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("inbox pruner: %w", err)
	}
	pr.retention = retention.RetentionDefault
	runCtx, cancel := context.WithCancel(ctx)
	pr.cancel = cancel
	go func() { pr.done <- p.Run(runCtx) }()
	return pr, nil
}

func (pr *pruner) rounds() int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.n
}

// busyRounds is the number of rounds the store was too busy for.
func (pr *pruner) busyRounds() int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.busy
}

func (pr *pruner) deleted() int64 {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.total
}

// stop stops the pruner and returns the first error a round reported, other
// than a busy store (see busyRounds).
func (pr *pruner) stop() error {
	pr.cancel()
	err := <-pr.done
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.firstErr != nil {
		err = errors.Join(err, fmt.Errorf("inbox pruner: %w", pr.firstErr))
	}
	return err
}
