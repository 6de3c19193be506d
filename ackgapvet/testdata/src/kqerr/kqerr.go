// Package kqerr is a go-zero consumer whose Consume returns the error of a
// failed update: go-queue's kq commits the offset anyway.
package kqerr

import (
	"context"

	"github.com/zeromicro/go-queue/kq"
)

// OrderService is the order RPC client.
type OrderService interface {
	MarkPaid(ctx context.Context, sn string) error
}

// OrderMq updates the order through its service.
type OrderMq struct{ svc OrderService }

func (m *OrderMq) Consume(ctx context.Context, key, value string) error {
	if err := m.svc.MarkPaid(ctx, value); err != nil { // want `returns the error when m.svc.MarkPaid fails \(line \d+\), but go-queue's kq commits the offset whatever Consume returns`
		return err
	}
	return nil
}

// RetryMq retries inside Consume until the update succeeds: clean.
type RetryMq struct{ svc OrderService }

func (m *RetryMq) Consume(ctx context.Context, key, value string) error {
	for {
		if err := m.svc.MarkPaid(ctx, value); err == nil {
			return nil
		}
	}
}

func Start(c kq.KqConf) {
	_ = kq.MustNewQueue(c, &OrderMq{})
	_ = kq.MustNewQueue(c, &RetryMq{})
}
