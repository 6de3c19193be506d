// Package cqrsiface registers a CQRS event handler given as a method
// value of an interface: the module's methods that implement it are the
// consumers (field trial, wave 47: tickets' read models).
package cqrsiface

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/components/cqrs"

	"example.com/program/cqrsiface/events"
)

type opsBookings interface {
	OnBookingMade(ctx context.Context, e *events.BookingMade) error
}

// Register adds the read model's handlers to the processor.
func Register(ep *cqrs.EventProcessor, ob opsBookings) error {
	return ep.AddHandlers(cqrs.NewEventHandler("ops.OnBookingMade", ob.OnBookingMade))
}
