// Package readmodel keeps the bookings read model; its methods are the
// CQRS handlers, given to the processor as method values of an interface
// declared beside it (field trial, wave 47: tickets' OpsBookingReadModel).
package readmodel

import (
	"context"
	"database/sql"

	"example.com/program/cqrsiface/events"
)

// Bookings is the read model.
type Bookings struct{ DB *sql.DB }

// OnBookingMade adds the booking's row.
func (b Bookings) OnBookingMade(ctx context.Context, e *events.BookingMade) error {
	_, err := b.DB.ExecContext(ctx, "INSERT INTO ops_bookings (id) VALUES ($1)", e.ID)
	return err
}
