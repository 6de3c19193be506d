// Package pond is a stub of github.com/alitto/pond/v2: only the names the
// checker reads.
package pond

// Task is a submitted task.
type Task interface {
	// Wait waits for the task and returns its panic as an error.
	Wait() error
}

// Pool runs submitted tasks in its workers.
type Pool interface {
	// Submit runs task in a worker.
	Submit(task func()) Task
}

// NewPool makes a pool.
func NewPool(maxConcurrency int) Pool { return nil }
