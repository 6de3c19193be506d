// Package viabase is a service built on the shared module's consumer base:
// its handler is reached only through the base's loop.
package viabase

import (
	"bytes"
	"context"
	"net/http"

	"github.com/segmentio/kafka-go"
)

// Shipper books a shipment per message.
type Shipper struct{ C *http.Client }

// Handle posts the booking with no idempotency key: a redelivery books twice.
func (s *Shipper) Handle(ctx context.Context, m kafka.Message) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://ship.example/book", bytes.NewReader(m.Value))
	if err != nil {
		return err
	}
	resp, err := s.C.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
