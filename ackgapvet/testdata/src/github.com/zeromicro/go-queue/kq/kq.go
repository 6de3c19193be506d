// Package kq is a stub of github.com/zeromicro/go-queue/kq.
package kq

import "context"

type KqConf struct {
	Topic         string
	ForceCommit   bool
	Processors    int
	CommitInOrder bool
}

type ConsumeHandler interface {
	Consume(ctx context.Context, key, value string) error
}

type MessageQueue interface {
	Start()
	Stop()
}

func MustNewQueue(c KqConf, handler ConsumeHandler) MessageQueue { return nil }

// ConsumeHandle is a function that handles one message.
type ConsumeHandle func(ctx context.Context, key, value string) error

// WithHandle makes a ConsumeHandler of a function.
func WithHandle(handle ConsumeHandle) ConsumeHandler { return nil }
