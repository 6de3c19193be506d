// Package batch is a stub of ackgap's batch package.
package batch

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ackgap/ackgap/router"
)

type BatchHandlerFunc[TTx any] func(ctx context.Context, tx TTx, msgs []*message.Message) error

type Config[TTx any] struct {
	Consumer     string
	Handler      router.HandlerFunc[TTx]
	BatchHandler BatchHandlerFunc[TTx]
}
