package billingsim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

// instance is one router instance: a router.Router with one handler for
// consumer "billing", on a subscriber of its own.
type instance struct {
	n    int
	r    interface{ Close() error }
	sub  *watchedSubscriber
	done chan error // Run's result

	closeOnce sync.Once
	closeErr  error
}

// close closes the router (which closes its subscriber) and waits for Run.
func (in *instance) close() error {
	in.closeOnce.Do(func() {
		err := in.r.Close()
		if rerr := <-in.done; rerr != nil {
			err = errors.Join(err, rerr)
		}
		if err != nil {
			in.closeErr = fmt.Errorf("router instance %d: %w", in.n, err)
		}
	})
	return in.closeErr
}

// fleet starts and closes the router instances.
type fleet[TTx any] struct {
	store stores.Store[TTx]
	br    demoBroker
	cfg   router.Config
	// tracing is package telemetry's middleware, outermost in every
	// instance.
	tracing message.HandlerMiddleware
	f       *faults
	crash   *instanceCrash
	runCtx  context.Context

	mu  sync.Mutex
	all []*instance
}

// start starts router instance n on a subscriber of its own and waits
// until it runs.
func (fl *fleet[TTx]) start(ctx context.Context, n int) (*instance, error) {
	sub, topic, err := fl.br.subscriber(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("router instance %d: subscriber: %w", n, err)
	}
	inst := &instance{n: n, sub: newWatchedSubscriber(sub), done: make(chan error, 1)}
	cfg := fl.cfg
	cfg.Middlewares = []message.HandlerMiddleware{fl.tracing, fl.f.middleware}
	if fl.crash != nil {
		cfg.Middlewares = append(cfg.Middlewares, fl.crash.middleware(inst))
	}
	r, err := router.New(fl.store, &cfg)
	if err == nil {
		err = r.AddHandler(orders.Consumer, topic, inst.sub, orders.Handler[TTx]())
	}
	if err != nil {
		return nil, errors.Join(err, inst.sub.Close())
	}
	inst.r = r
	fl.mu.Lock()
	fl.all = append(fl.all, inst)
	fl.mu.Unlock()
	go func() { inst.done <- r.Run(fl.runCtx) }()
	select {
	case <-r.Running():
		return inst, nil
	case err := <-inst.done:
		inst.done <- err // close reads it
		return nil, fmt.Errorf("router instance %d stopped at start: %w", n, err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// closeAll closes every instance at once (on Kafka one after the other
// would rebalance the group at each) and waits for them.
func (fl *fleet[TTx]) closeAll() error {
	fl.mu.Lock()
	all := slices.Clone(fl.all)
	fl.mu.Unlock()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, inst := range all {
		wg.Go(func() { errs[i] = inst.close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (fl *fleet[TTx]) count() int {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return len(fl.all)
}

// backend is a store and the database it lives in, opened by openSQLite or
// openPostgres.
type backend[TTx any] struct {
	// name is "sqlite" or "postgres"; location the file or schema.
	name, location string
	// schema is the PostgreSQL schema or the MariaDB database the store
	// and the orders live in; empty on SQLite.
	schema string
	store  stores.Store[TTx]
	// outbox is the same store, as the relays and operators use it
	// (migrations, pruning, stats).
	outbox stores.Operator
	db     appDB
	// close releases the database and, unless kept, deletes the demo's
	// data.
	close func() error
}
