// Package cqrsheader publishes an event from a CQRS command handler with
// the command's header, idempotency key and all (field trial, wave 47:
// tickets' TicketRefunded_v1{Header: cmd.Header}): the receivers dedupe a
// redelivery's repeat. The twin makes a new header for every delivery.
package cqrsheader

import (
	"context"
	"database/sql"
	"time"

	"github.com/ThreeDotsLabs/watermill/components/cqrs"
)

// Header is every message's header.
type Header struct {
	ID             string
	IdempotencyKey string
}

// NewHeader makes a header for a new message.
func NewHeader() Header { return Header{ID: time.Now().String()} }

// RefundTicket asks for a refund.
type RefundTicket struct {
	Header   Header
	TicketID string
}

// TicketRefunded says a ticket was refunded.
type TicketRefunded struct {
	Header   Header
	TicketID string
}

// Handler handles commands.
type Handler struct {
	Bus *cqrs.EventBus
	DB  *sql.DB
}

// Refund publishes the refund with the command's header.
func (h Handler) Refund(ctx context.Context, cmd *RefundTicket) error {
	if _, err := h.DB.ExecContext(ctx, "UPDATE tickets SET refunded = true WHERE id = $1", cmd.TicketID); err != nil {
		return err
	}
	return h.Bus.Publish(ctx, TicketRefunded{Header: cmd.Header, TicketID: cmd.TicketID})
}

// Reprint publishes the refund with a new header each time.
func (h Handler) Reprint(ctx context.Context, cmd *RefundTicket) error {
	if _, err := h.DB.ExecContext(ctx, "UPDATE tickets SET printed = true WHERE id = $1", cmd.TicketID); err != nil {
		return err
	}
	return h.Bus.Publish(ctx, TicketRefunded{Header: NewHeader(), TicketID: cmd.TicketID})
}

// Register adds the handlers.
func Register(cp *cqrs.CommandProcessor, h Handler) error {
	return cp.AddHandlers(cqrs.NewCommandHandler("refund", h.Refund), cqrs.NewCommandHandler("reprint", h.Reprint))
}
