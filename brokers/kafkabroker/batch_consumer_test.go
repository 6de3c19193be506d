package kafkabroker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/middleware"
)

// batchRun is a BatchConsumer running in the background.
type batchRun struct {
	bc  *kafkabroker.BatchConsumer
	err chan error

	mu      sync.Mutex
	batches [][]string // the event ids of every batch, in the order they ran
}

// runBatches starts a BatchConsumer of topic in group running h through a
// batch.Processor on b's store; it is closed when t ends.
func runBatches(t testing.TB, b *seqBackend, topic, group string, h func(ctx context.Context, tx pgx.Tx, msg *message.Message) error,
	rep *reports, tune func(*kafkabroker.BatchConsumerConfig)) *batchRun {
	t.Helper()
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing", Observer: rep.observe},
		Handler:     h,
	})
	require.NoError(t, err)
	cfg := &kafkabroker.BatchConsumerConfig{
		ParallelConfig: kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
			Brokers:        kafkaBrokers(t),
			ConsumerGroup:  group,
			HoldTimeout:    20 * time.Second,
			SessionTimeout: 2 * time.Second,
			CloseTimeout:   10 * time.Second,
		}},
		Topic:           topic,
		DeadLetter:      newPublisher(t),
		DeadLetterTopic: topic + ".dlq",
	}
	if tune != nil {
		tune(cfg)
	}
	br := &batchRun{err: make(chan error, 1)}
	fn := func(ctx context.Context, msgs []*message.Message) []error {
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.Metadata.Get(ackgap.MetadataEventIDKey)
		}
		br.mu.Lock()
		br.batches = append(br.batches, ids)
		br.mu.Unlock()
		return p.ProcessErrors(ctx, msgs)
	}
	br.bc, err = kafkabroker.NewBatchConsumer(fn, cfg, testLogger())
	require.NoError(t, err)
	go func() { br.err <- br.bc.Run(context.Background()) }()
	t.Cleanup(func() { _ = br.close() })
	return br
}

// close closes the consumer and returns Close's or Run's error.
func (br *batchRun) close() error {
	err := br.bc.Close()
	if runErr := <-br.err; runErr != nil && err == nil {
		err = runErr
	}
	br.err <- nil // a second close returns at once
	return err
}

func (br *batchRun) snapshot() [][]string {
	br.mu.Lock()
	defer br.mu.Unlock()
	return slices.Clone(br.batches)
}

// TestBatchConsumerKeyOrder: 4,000 events over 1,000 keys on 4
// partitions, consumed in batched transactions: every key's events are
// applied in offset order (the guarded per-key sequence never skips),
// every event exactly once, and every offset is committed.
func TestBatchConsumerKeyOrder(t *testing.T) {
	t.Parallel()
	const n, keys = 4000, 1000
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, keys)
	produceSeq(t, topic, n, keys)

	rep := &reports{}
	br := runBatches(t, b, topic, group, b.apply, rep, nil)
	eventually(t, 5*time.Minute, "4,000 events applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	require.NoError(t, br.close())

	b.mu.Lock()
	require.Empty(t, b.violations, "events applied out of their key's order")
	b.mu.Unlock()
	for k, seq := range b.seqs(t) {
		require.Equal(t, n/keys, seq, "key %s", k)
	}
	applied := b.applied(t)
	require.Len(t, applied, n)
	for id, c := range applied {
		require.Equal(t, 1, c, "event %s applied %d times", id, c)
	}
	batches := br.snapshot()
	for _, ids := range batches {
		require.LessOrEqual(t, len(ids), kafkabroker.MaxBatchDefault)
	}
	t.Logf("%d events in %d transactions (%.1f per batch)", n, len(batches), float64(n)/float64(len(batches)))
	assertNothingRedelivered(t, topic, group)
}

// TestBatchConsumerFailingMessageMidBatch: one partition, 20 keys and a
// poison event, batches of 20. The first batch is the first 20 records
// (20 keys, nothing of one key twice); in it one event fails twice
// (transient) and the poison event is rejected (ackgap.Permanent). The
// rest of that batch commits; the failing event is retried until it
// applies, before any later event of its key; the poison event is
// dead-lettered with its reason and frees its key. Every other event is
// applied once, in key order, and every offset is committed.
func TestBatchConsumerFailingMessageMidBatch(t *testing.T) {
	t.Parallel()
	const n, keys, flakyAt, poisonAt = 200, 20, 9, 5
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, keys)
	var msgs []*message.Message
	for i := range n {
		if i == poisonAt {
			msgs = append(msgs, seqEvent(t, "evt-poison", "k-poison", 1))
		}
		msgs = append(msgs, seqEvent(t, fmt.Sprintf("evt-%03d", i), fmt.Sprintf("k-%d", i%keys), i/keys+1))
	}
	produce(t, topic, 0, msgs)
	flakyID := fmt.Sprintf("evt-%03d", flakyAt)

	var mu sync.Mutex
	tries := 0
	handler := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		switch msg.Metadata.Get(ackgap.MetadataEventIDKey) {
		case "evt-poison":
			return ackgap.Permanent(ackgap.ReasonInvalidData, errors.New("test: the order does not exist"))
		case flakyID:
			mu.Lock()
			tries++
			try := tries
			mu.Unlock()
			if try <= 2 {
				return errFlaky
			}
		}
		return b.apply(ctx, tx, msg)
	}
	rep := &reports{}
	br := runBatches(t, b, topic, group, handler, rep, func(c *kafkabroker.BatchConsumerConfig) {
		c.MaxBatch = keys
		c.BatchWait = 5 * time.Second // the last, partial batch waits that long
		c.Workers = 1
		c.NackResendSleep = 20 * time.Millisecond
	})
	eventually(t, 2*time.Minute, "every event applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	eventually(t, time.Minute, "everything committed", func() bool { return committedOffset(t, group, topic, 0) == n+1 })
	require.NoError(t, br.close())

	first := br.snapshot()[0]
	require.Len(t, first, keys, "the first batch: the first %d records", keys)
	require.Contains(t, first, flakyID)
	require.Contains(t, first, "evt-poison")
	for _, id := range first {
		if id != flakyID && id != "evt-poison" {
			require.Equal(t, ackgap.OutcomeApplied, rep.outcomes(id)[0], "event %s of the failing batch committed", id)
		}
	}
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed, ackgap.OutcomeFailed, ackgap.OutcomeApplied}, rep.outcomes(flakyID))
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeRejected}, rep.outcomes("evt-poison"))

	b.mu.Lock()
	require.Empty(t, b.violations, "events applied out of their key's order")
	b.mu.Unlock()
	for k, seq := range b.seqs(t) {
		require.Equal(t, n/keys, seq, "key %s", k)
	}
	applied := b.applied(t)
	require.Len(t, applied, n)
	for id, c := range applied {
		require.Equal(t, 1, c, "event %s applied %d times", id, c)
	}
	dl := readAll(t, topic+".dlq", 1)
	require.Equal(t, "evt-poison", dl[0].Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, ackgap.ReasonInvalidData, dl[0].Metadata.Get(ackgap.MetadataDeadLetterReason))
	assertNothingRedelivered(t, topic, group)
}

// TestBatchConsumerConfig: bad settings are named at once.
func TestBatchConsumerConfig(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, []*message.Message) []error { return nil }
	_, err := kafkabroker.NewBatchConsumer(fn, nil, nil)
	require.ErrorContains(t, err, "invalid config")
	_, err = kafkabroker.NewBatchConsumer(nil, &kafkabroker.BatchConsumerConfig{
		ParallelConfig: kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{Brokers: []string{"127.0.0.1:1"}, ConsumerGroup: "g"}},
		MaxBatch:       -1, Workers: -2, MaxAttempts: -3,
	}, nil)
	require.ErrorContains(t, err, "invalid config")
	for _, want := range []string{"BatchFunc is nil", "Topic is empty", "MaxBatch is -1", "Workers is -2", "MaxAttempts is -3", "DeadLetter is nil", "DeadLetterTopic is empty"} {
		require.ErrorContains(t, err, want)
	}
	c := kafkabroker.BatchConsumerConfig{}.WithDefaults()
	require.Equal(t, kafkabroker.MaxBatchDefault, c.MaxBatch)
	require.Equal(t, kafkabroker.BatchWaitDefault, c.BatchWait)
	require.Equal(t, kafkabroker.BatchWorkersDefault, c.Workers)
	require.Equal(t, kafkabroker.BatchMaxAttemptsDefault, c.MaxAttempts)
	require.Equal(t, kafkabroker.OrderingKey, c.Ordering)
}
