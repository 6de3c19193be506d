// Package stores is a stub of ackgap's stores package: the store contract.
package stores

import (
	"context"

	"github.com/ackgap/ackgap"
)

type Store[TTx any] interface {
	TransitionIfStateTx(ctx context.Context, tx TTx, p *ackgap.Transition) (*ackgap.TransitionResult, error)
}
