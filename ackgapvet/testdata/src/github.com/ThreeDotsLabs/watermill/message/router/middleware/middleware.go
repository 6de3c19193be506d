// Package middleware is a stub of Watermill's router middleware.
package middleware

import (
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

func InstantAck(h message.HandlerFunc) message.HandlerFunc { return h }

type Deduplicator struct {
	Timeout time.Duration
}

func (d Deduplicator) Middleware(h message.HandlerFunc) message.HandlerFunc { return h }

// PoisonQueue is a stub.
func PoisonQueue(pub message.Publisher, topic string) (message.HandlerMiddleware, error) {
	return nil, nil
}

// PoisonQueueWithFilter is a stub.
func PoisonQueueWithFilter(pub message.Publisher, topic string, f func(error) bool) (message.HandlerMiddleware, error) {
	return nil, nil
}

// Retry is a stub.
type Retry struct{ MaxRetries int }

// Middleware is a stub.
func (r Retry) Middleware(h message.HandlerFunc) message.HandlerFunc { return h }

// Recoverer is a stub.
func Recoverer(h message.HandlerFunc) message.HandlerFunc { return h }

// CorrelationID is a stub.
func CorrelationID(h message.HandlerFunc) message.HandlerFunc { return h }
