// Package asynq is a stub of github.com/hibiken/asynq: only the names the
// checker reads.
package asynq

import (
	"context"
	"time"
)

// Task is a job.
type Task struct{}

// NewTask makes a task.
func NewTask(typename string, payload []byte, opts ...Option) *Task { return &Task{} }

// Option is an enqueue option.
type Option interface{}

// TaskID sets the task's id: a second enqueue of it fails.
func TaskID(id string) Option { return nil }

// Unique rejects a duplicate task for ttl.
func Unique(ttl time.Duration) Option { return nil }

// TaskInfo describes an enqueued task.
type TaskInfo struct{}

// Client enqueues tasks.
type Client struct{}

// Enqueue enqueues task.
func (c *Client) Enqueue(task *Task, opts ...Option) (*TaskInfo, error) { return nil, nil }

// EnqueueContext enqueues task.
func (c *Client) EnqueueContext(ctx context.Context, task *Task, opts ...Option) (*TaskInfo, error) {
	return nil, nil
}
