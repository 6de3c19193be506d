// Package kqerr is a go-zero consumer whose Consume returns the error of a
// failed update: go-queue's kq commits the offset anyway.
package kqerr

import (
	"context"
	"net/http"
	"strings"

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

// JudgeMq calls a function that turns every failure into a response code
// and a nil error (wave 33, YunOJ's JudgeLogic.Judge): its own error branch
// never runs, and the finding is where the failure is turned into nil.
type JudgeMq struct{ svc OrderService }

// Verdict is the judge's answer.
type Verdict struct{ Code int }

func (m *JudgeMq) Consume(ctx context.Context, key, value string) error {
	if _, err := m.judge(ctx, value); err != nil {
		return err
	}
	return nil
}

func (m *JudgeMq) judge(ctx context.Context, sn string) (Verdict, error) {
	resp, err := http.Post("https://judge.example/run", "text/plain", strings.NewReader(sn))
	if err != nil {
		return Verdict{Code: 500}, nil
	}
	return Verdict{Code: resp.StatusCode}, nil
}

// startReserve registers a function with kq.WithHandle (wave 36,
// smart-reserve): it is the queue's Consume, and its returned error is
// committed all the same.
func startReserve(c kq.KqConf, svc OrderService) {
	kq.MustNewQueue(c, kq.WithHandle(func(ctx context.Context, key, value string) error {
		if err := svc.MarkPaid(ctx, value); err != nil { // want `returns the error when svc.MarkPaid fails`
			return err
		}
		return nil
	})).Start()
}

func Start(c kq.KqConf) {
	_ = kq.MustNewQueue(c, &JudgeMq{})
	_ = kq.MustNewQueue(c, &OrderMq{})
	_ = kq.MustNewQueue(c, &RetryMq{})
}
