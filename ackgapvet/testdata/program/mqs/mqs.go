// Package mqs holds go-queue kq handlers, given to kq.MustNewQueue by main
// in another package.
package mqs

import (
	"context"
	"net/http"
	"strings"
)

type PaymentMq struct{ C *http.Client }

func NewPaymentMq(c *http.Client) *PaymentMq { return &PaymentMq{C: c} }

func (m *PaymentMq) Consume(ctx context.Context, key, value string) error {
	_, err := m.C.Post("http://orders.local/paid", "text/plain", strings.NewReader(value))
	return err
}
