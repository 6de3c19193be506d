// Package invoices registers typed handlers through grouph's generic
// wrapper.
package invoices

import (
	"bytes"
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/components/cqrs"

	"example.com/program/grouph"
)

// Created is an invoice event.
type Created struct{ ID string }

// Handlers returns the group's handlers: a mail per invoice.
func Handlers(c *http.Client) []cqrs.GroupEventHandler {
	return []cqrs.GroupEventHandler{
		grouph.On(func(ctx context.Context, e *Created) error {
			_, err := c.Post("https://mail.example.com/invoice", "text/plain", bytes.NewReader([]byte(e.ID)))
			return err
		}),
	}
}
