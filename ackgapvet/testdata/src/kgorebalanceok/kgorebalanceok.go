// Package kgorebalanceok allows a rebalance after each poll's work: clean.
package kgorebalanceok

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

func run(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("crawler"), kgo.ConsumeTopics("jobs"), kgo.BlockRebalanceOnPoll())
	if err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		_ = cl.CommitRecords(ctx)
		_ = fs
		cl.AllowRebalance()
	}
}
