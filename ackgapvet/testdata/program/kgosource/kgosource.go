// Package kgosource polls franz-go once per call and returns the records
// as jobs, behind an interface whose loop is in another package (field
// trial, wave 49: graphrag's KafkaJobSource.Poll under Consumer.Run): the
// loop is the consumer, not the wrapper.
package kgosource

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Job is a record's value.
type Job struct{ Value []byte }

// Kafka is a job source over franz-go.
type Kafka struct{ Cl *kgo.Client }

// Poll fetches one batch of jobs.
func (k *Kafka) Poll(ctx context.Context) ([]Job, error) {
	var js []Job
	k.Cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { js = append(js, Job{Value: r.Value}) })
	return js, nil
}

// Commit commits what was polled.
func (k *Kafka) Commit(ctx context.Context) error { return k.Cl.CommitUncommittedOffsets(ctx) }
