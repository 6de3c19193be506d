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
