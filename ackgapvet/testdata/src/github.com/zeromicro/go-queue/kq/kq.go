// Package kq is a stub of github.com/zeromicro/go-queue/kq.
package kq

import "context"

type KqConf struct {
	Topic       string
	ForceCommit bool
}

type ConsumeHandler interface {
	Consume(ctx context.Context, key, value string) error
}

type MessageQueue interface {
	Start()
	Stop()
}

func MustNewQueue(c KqConf, handler ConsumeHandler) MessageQueue { return nil }
