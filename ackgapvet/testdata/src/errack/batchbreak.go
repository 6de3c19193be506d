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

// consumePartitions hands each fetch to a function that works each
// partition in a closure given to EachPartition and breaks at a record
// whose handling (its retries and its dead-letter step) failed, a bool
// (field trial, wave 31: notezy's consumeFetches): the next poll's commit
// passes over it.
func consumePartitions(ctx context.Context, cl *kgo.Client, handle func(*kgo.Record) error) {
	for {
		fs := cl.PollFetches(ctx)
		consumeFetches(ctx, cl, fs, handle)
	}
}

func consumeFetches(ctx context.Context, cl *kgo.Client, fs kgo.Fetches, handle func(*kgo.Record) error) {
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		var ok []*kgo.Record
		for _, r := range p.Records {
			if !consumeRecord(r, handle) { // want `breaks out of the batch when consumeRecord fails, and the records before it are committed \(kgo.Client.CommitRecords\)`
				break
			}
			ok = append(ok, r)
		}
		if len(ok) > 0 {
			_ = cl.CommitRecords(ctx, ok[len(ok)-1])
		}
	})
}

// consumeRecord reports whether the record was handled or dead-lettered.
func consumeRecord(r *kgo.Record, handle func(*kgo.Record) error) bool {
	for range 3 {
		if handle(r) == nil {
			return true
		}
	}
	return false
}

// consumeSorted breaks at a record that is no longer wanted (a predicate,
// not a failure) and commits what it read: clean.
func consumeSorted(ctx context.Context, cl *kgo.Client, handle func(*kgo.Record) error) {
	for {
		fs := cl.PollFetches(ctx)
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				if !isWanted(r) {
					break
				}
				if handle(r) != nil {
					return
				}
			}
			_ = cl.CommitRecords(ctx, p.Records...)
		})
	}
}

func isWanted(r *kgo.Record) bool { return len(r.Value) > 0 }
