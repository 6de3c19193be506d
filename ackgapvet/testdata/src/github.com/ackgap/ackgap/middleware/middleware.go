// Package middleware is a stub of ackgap's middleware package.
package middleware

import (
	"context"

	"github.com/ackgap/ackgap/stores"
)

func TransitionIfState(ctx context.Context, p *stores.TransitionParams) (*stores.TransitionResult, error) {
	return &stores.TransitionResult{}, nil
}

func QueueOutbox(ctx context.Context, p *stores.OutboxInsertParams) error { return nil }
