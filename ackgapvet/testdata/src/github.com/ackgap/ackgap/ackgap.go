// Package ackgap is a stub of ackgap's root package: the handler API.
package ackgap

import "context"

type Transition struct {
	Table string
	Key   any
	From  []string
	To    string
}

type TransitionResult struct{ Found bool }

func (r *TransitionResult) Applied() bool { return true }
func (r *TransitionResult) Err() error    { return nil }

type OutboxEntry struct {
	Kind, IdempotencyKey string
	Payload              []byte
}

type PendingTransition struct{}

func (p *PendingTransition) Result(ctx context.Context) (*TransitionResult, error) {
	return &TransitionResult{}, nil
}

func ApplyTransition(ctx context.Context, t *Transition, then ...*OutboxEntry) (*PendingTransition, error) {
	return &PendingTransition{}, nil
}

func AddOutbox(ctx context.Context, e *OutboxEntry) error { return nil }
