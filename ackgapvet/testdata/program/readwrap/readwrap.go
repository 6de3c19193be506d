// Package readwrap reads through kq's interface, whose ReadMessage commits
// as it returns, then posts the payment: a crash in between loses it.
package readwrap

import (
	"bytes"
	"context"
	"net/http"

	"example.com/program/readwrap/kq"
)

// Settle settles payments.
func Settle(ctx context.Context, c kq.Consumer) {
	for {
		m, err := c.ReadMessage(ctx)
		if err != nil {
			continue
		}
		_, _ = http.Post("https://bank.example/settle", "application/json", bytes.NewReader(m.Value))
	}
}
