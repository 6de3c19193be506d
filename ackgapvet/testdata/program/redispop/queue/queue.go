// Package queue is the code's own task queue: Redis lists in production,
// a channel in tests (field trial, wave 43: go-store's pkg/queue).
package queue

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Queue pushes and pops tasks.
type Queue interface {
	Push(ctx context.Context, name string, payload []byte) error
	Pop(ctx context.Context, name string) ([]byte, error)
}

// Redis is the list queue.
type Redis struct{ C *redis.Client }

// Push adds a task.
func (q *Redis) Push(ctx context.Context, name string, payload []byte) error {
	return q.C.LPush(ctx, name, payload).Err()
}

// Pop takes a task off the list: BRPOP removes it as it returns it.
func (q *Redis) Pop(ctx context.Context, name string) ([]byte, error) {
	r, err := q.C.BRPop(ctx, 0, name).Result()
	if err != nil {
		return nil, err
	}
	return []byte(r[1]), nil
}

// task is one queued payload.
type task struct{ payload []byte }

// Memory is the channel queue.
type Memory struct{ ch chan task }

// Push adds a task.
func (q *Memory) Push(_ context.Context, _ string, payload []byte) error {
	q.ch <- task{payload}
	return nil
}

// Pop takes a task.
func (q *Memory) Pop(ctx context.Context, _ string) ([]byte, error) {
	select {
	case t := <-q.ch:
		return t.payload, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Reliable moves each task into a processing list and removes it after
// the work.
type Reliable struct{ C *redis.Client }

// Pop moves a task into the processing list.
func (q *Reliable) Pop(ctx context.Context, name string) ([]byte, error) {
	s, err := q.C.BLMove(ctx, name, name+":processing", "RIGHT", "LEFT", 0).Result()
	return []byte(s), err
}

// Done removes a task from the processing list.
func (q *Reliable) Done(ctx context.Context, name string, payload []byte) error {
	return q.C.LRem(ctx, name+":processing", 1, payload).Err()
}
