package errack

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeBatches commits the records before a failed one and polls on: the
// failed record is passed over.
func consumeBatches(ctx context.Context, cl *kgo.Client, apply func(*kgo.Record) error) {
	for {
		fs := cl.PollFetches(ctx)
		var done []*kgo.Record
		for i := range fs {
			if apply(&fs[i]) != nil { // want `breaks out of the batch when apply fails, and the records before it are committed \(kgo.Client.CommitRecords\)`
				break // "not committed: it will be consumed again"
			}
			done = append(done, &fs[i])
		}
		if len(done) > 0 {
			_ = cl.CommitRecords(ctx, done...)
		}
	}
}

// consumeAndStop returns at the failed record: the partition is consumed
// again from the last commit. Clean.
func consumeAndStop(ctx context.Context, cl *kgo.Client, apply func(*kgo.Record) error) error {
	for {
		fs := cl.PollFetches(ctx)
		for i := range fs {
			if err := apply(&fs[i]); err != nil {
				return err
			}
			_ = cl.CommitRecords(ctx, &fs[i])
		}
	}
}
