// Package sender sends the mail errgo's consumer asks for.
package sender

import (
	"bytes"
	"context"
	"net/http"
)

// Handler sends one message's mail.
type Handler struct{ C *http.Client }

// Handle posts the mail.
func (h *Handler) Handle(ctx context.Context, body []byte) error {
	_, err := h.C.Post("https://mail.example.com/send", "application/json", bytes.NewReader(body))
	return err
}
