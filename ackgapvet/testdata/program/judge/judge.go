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

// Start runs the queue.
func Start() {
	kq.MustNewQueue(kq.KqConf{}, &SubmitMq{L: logic.New()}).Start()
}
