package errack

import (
	"context"
	"errors"
	"time"

	"github.com/hibiken/asynq"
)

// ErrLockAlreadyHeld says another holder has the lock.
var ErrLockAlreadyHeld = errors.New("lock already held")

// Locker takes and gives back named locks (SETNX with a TTL).
type Locker interface {
	Acquire(ctx context.Context, key string, ttl time.Duration) error
	Release(ctx context.Context, key string) error
}

// Deployer deploys a site under its lock (field trial, wave 53:
// ventopanel's deploy task).
type Deployer struct{ lock Locker }

func (d *Deployer) ProcessTask(ctx context.Context, t *asynq.Task) error {
	site := string(t.Payload())
	if err := d.lock.Acquire(ctx, "deploy:"+site, 15*time.Minute); err != nil {
		if errors.Is(err, ErrLockAlreadyHeld) {
			return nil // want `returns without an error when the lock d.lock.Acquire takes is already held \(line 26\): the asynq task handler acks the message with its work undone`
		}
		return err
	}
	defer func() { _ = d.lock.Release(context.Background(), "deploy:"+site) }()
	return deploy(ctx, site)
}

// RetryDeployer asks for a retry when the lock is held: no finding.
type RetryDeployer struct{ lock Locker }

func (d *RetryDeployer) ProcessTask(ctx context.Context, t *asynq.Task) error {
	site := string(t.Payload())
	if err := d.lock.Acquire(ctx, "deploy:"+site, 15*time.Minute); err != nil {
		return err
	}
	defer func() { _ = d.lock.Release(context.Background(), "deploy:"+site) }()
	return deploy(ctx, site)
}

func deploy(ctx context.Context, site string) error { return nil }

func registerDeployers(mux *asynq.ServeMux) {
	mux.Handle("deploy", &Deployer{})
	mux.Handle("deploy-retry", &RetryDeployer{})
}
