// Package mqs holds go-queue kq handlers, given to kq.MustNewQueue by main
// in another package.
package mqs

import (
	"context"
	"net/http"
	"strings"

	"github.com/zeromicro/go-queue/kq"
)

type PaymentMq struct{ C *http.Client }

func NewPaymentMq(c *http.Client) *PaymentMq { return &PaymentMq{C: c} }

func (m *PaymentMq) Consume(ctx context.Context, key, value string) error {
	_, err := m.C.Post("http://orders.local/paid", "text/plain", strings.NewReader(value))
	return err
}

// refundMq is unexported: main sees it only as the kq.ConsumeHandler that
// NewRefundMq returns.
type refundMq struct{ c *http.Client }

// NewRefundMq returns the handler as its interface (Go-zero-IM's
// NewMsgReadTransfer).
func NewRefundMq(c *http.Client) kq.ConsumeHandler { return &refundMq{c: c} }

func (m *refundMq) Consume(ctx context.Context, key, value string) error {
	_, err := m.c.Post("http://orders.local/refund", "text/plain", strings.NewReader(value))
	return err
}
