// Package judge is a go-zero kq consumer shaped like wave 33's YunOJ: its
// Consume returns the error of a logic call that turns every failure into
// a verdict and a nil error, so its own error branch never runs.
package judge

import (
	"context"

	"github.com/zeromicro/go-queue/kq"

	"example.com/program/judge/logic"
)

// SubmitMq judges submissions.
type SubmitMq struct{ L *logic.Judge }

// Consume judges one submission.
func (m *SubmitMq) Consume(ctx context.Context, key, value string) error {
	if _, err := m.L.Run(ctx, value); err != nil {
		return err
	}
	return nil
}

// Users looks users up (a gRPC client in wave 34's kk-forum).
type Users interface {
	Find(ctx context.Context, id string) (string, error)
}

// IndexMq indexes articles: Consume returns operate's error as its own.
type IndexMq struct {
	U Users
	L *logic.Judge
}

// Consume hands the message to operate.
func (m *IndexMq) Consume(ctx context.Context, key, value string) error {
	return m.operate(ctx, value)
}

// operate returns the lookup's error, which kq commits: the message is
// lost (wave 34, kk-forum H4).
func (m *IndexMq) operate(ctx context.Context, id string) error {
	name, err := m.U.Find(ctx, id)
	if err != nil {
		return err
	}
	_, err = m.L.Run(ctx, name)
	return err
}

// Start runs the queues.
func Start(u Users) {
	kq.MustNewQueue(kq.KqConf{}, &SubmitMq{L: logic.New()}).Start()
	kq.MustNewQueue(kq.KqConf{}, &IndexMq{U: u, L: logic.New()}).Start()
}
