// Package v1 is a stub of client-go's typed batch/v1 client for the
// checker's tests.
package v1

import "context"

// Job is a Kubernetes Job.
type Job struct{ Name, GenerateName string }

// CreateOptions, UpdateOptions and GetOptions stand for metav1's.
type (
	CreateOptions struct{}
	UpdateOptions struct{}
	GetOptions    struct{}
)

// JobInterface is the typed client of one namespace's Jobs.
type JobInterface interface {
	Create(ctx context.Context, job *Job, opts CreateOptions) (*Job, error)
	Update(ctx context.Context, job *Job, opts UpdateOptions) (*Job, error)
	Get(ctx context.Context, name string, opts GetOptions) (*Job, error)
}
