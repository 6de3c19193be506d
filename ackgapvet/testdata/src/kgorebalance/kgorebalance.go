// Package kgorebalance blocks rebalances while it polls and never allows
// one: after the first poll the group cannot rebalance around it.
package kgorebalance

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

func run(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.ConsumerGroup("crawler"), kgo.ConsumeTopics("jobs"), kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll()) // want `kgo.BlockRebalanceOnPoll without a call of AllowRebalance`
	if err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		_ = cl.CommitRecords(ctx)
		_ = fs
	}
}
