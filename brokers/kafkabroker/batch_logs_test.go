package kafkabroker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

// TestBatchConsumerLogsEscapedEventID (issue 22, item 5): an event id that
// is not UTF-8 is logged in the event_id field of the nack line
// (LogNotApplied) and of the dead-letter line as the error text quotes it
// (Go escapes, quoted), never as raw bytes, which a JSON log would turn
// into U+FFFD and lose. The BatchFunc here is the caller's own (no inbox
// report): it fails the message once as a busy database would, then
// rejects it.
func TestBatchConsumerLogsEscapedEventID(t *testing.T) {
	t.Parallel()
	const id = "evt-\xff\xfe"
	quoted := fmt.Sprintf("%+q", id) // as ackgap.CheckEventID quotes it
	topic, group := unique("orders"), unique("billing")
	bad := message.NewMessage("uuid-\xff", []byte(`{}`))
	bad.Metadata.Set(ackgap.MetadataEventIDKey, id)
	produceRecords(t, topic, []*sarama.ProducerMessage{record(t, bad)})

	var calls atomic.Int32
	fn := func(_ context.Context, msgs []*message.Message) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			if calls.Add(1) == 1 {
				errs[i] = fmt.Errorf("test: %w", ackgap.ErrStoreUnavailable)
				continue
			}
			errs[i] = ackgap.Permanent(ackgap.ReasonEventIDInvalid,
				ackgap.CheckEventID(m.Metadata.Get(ackgap.MetadataEventIDKey), 0))
		}
		return errs
	}
	logs := &jsonLog{}
	cfg := parallelConfig(kafkaBrokers(t), group)
	cfg.NackResendSleep = 20 * time.Millisecond
	bc, err := kafkabroker.NewBatchConsumer(fn, &kafkabroker.BatchConsumerConfig{
		ParallelConfig: *cfg, Topic: topic, DeadLetter: newPublisher(t), DeadLetterTopic: topic + ".dlq",
	}, router.SlogLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(context.Background()) }()
	t.Cleanup(func() { _ = bc.Close() })
	eventually(t, time.Minute, "dead-lettered", func() bool { return len(logs.records(t, ackgap.LogDeadLettered)) > 0 })
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)

	nacked := logs.records(t, kafkabroker.LogNotApplied)
	require.NotEmpty(t, nacked)
	for _, r := range nacked {
		require.Equal(t, quoted, r["event_id"], "escaped as in the error text")
	}
	dead := logs.records(t, ackgap.LogDeadLettered)
	require.Len(t, dead, 1)
	require.Equal(t, quoted, dead[0]["event_id"])
	require.Equal(t, `"uuid-\xff"`, dead[0]["message_uuid"])
	require.Contains(t, dead[0]["error"], quoted, "the error text quotes the id the same way")
	require.NotContains(t, logs.text(), "\ufffd", "no byte was lost to a replacement character")
}

// TestBatchConsumerRejectedLoggedAsRejected (issue 22, item 5): two
// messages of one key are rejected in one batch (a permanent handler
// error, then a record without an event id). The first is dead-lettered
// and acked, so it holds nothing back: the second is dead-lettered in the
// same pass, logged as a dead letter only, never first as a message
// "redelivered after NackResendSleep" (kafkabroker.LogNotApplied). The
// BatchFunc nacks batches (as a busy database) until both records come in
// one, so the case does not depend on how the records were fetched.
func TestBatchConsumerRejectedLoggedAsRejected(t *testing.T) {
	t.Parallel()
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, 1)
	produceRecords(t, topic, []*sarama.ProducerMessage{
		record(t, seqEvent(t, "evt-poison", "k-1", 1)), // offset 0
		noIDRecord("k-1", "k-1,2,"),                    // offset 1, same key
		record(t, seqEvent(t, "evt-ok", "k-2", 1)),     // offset 2
	})
	handler := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		if msg.Metadata.Get(ackgap.MetadataEventIDKey) == "evt-poison" {
			return ackgap.Permanent(ackgap.ReasonInvalidData, errors.New("test: the order does not exist"))
		}
		return b.apply(ctx, tx, msg)
	}
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "billing"}, Handler: handler})
	require.NoError(t, err)
	logs := &jsonLog{}
	// A batch with one record of k-1 but not the other "finds the database
	// busy" (nacked, no attempt used, logged as not applied), until both
	// came in one batch.
	var met atomic.Bool
	together := func(ctx context.Context, msgs []*message.Message) []error {
		var offsets []int64
		for _, m := range msgs {
			if d, ok := ackgap.DeliveryFromContext(m.Context()); ok {
				offsets = append(offsets, d.Offset)
			}
		}
		if both := slices.Contains(offsets, 0) && slices.Contains(offsets, 1); both {
			met.Store(true)
		}
		if met.Load() || slices.Contains(offsets, 0) == slices.Contains(offsets, 1) {
			return p.ProcessErrors(ctx, msgs)
		}
		errs := make([]error, len(msgs))
		for i := range errs {
			errs[i] = fmt.Errorf("test: not both records of k-1 yet: %w", ackgap.ErrStoreUnavailable)
		}
		return errs
	}
	cfg := parallelConfig(kafkaBrokers(t), group)
	cfg.NackResendSleep = 20 * time.Millisecond
	bc, err := kafkabroker.NewBatchConsumer(together, &kafkabroker.BatchConsumerConfig{
		ParallelConfig: *cfg, Topic: topic, BatchWait: 50 * time.Millisecond,
		DeadLetter: newPublisher(t), DeadLetterTopic: topic + ".dlq",
	}, router.SlogLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(context.Background()) }()
	t.Cleanup(func() { _ = bc.Close() })
	eventually(t, time.Minute, "evt-ok applied", func() bool { return b.applied(t)["evt-ok"] == 1 })
	eventually(t, time.Minute, "everything committed", func() bool { return committedOffset(t, group, topic, 0) == 3 })
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)

	require.Equal(t, map[string]int{"evt-ok": 1}, b.applied(t))
	perOffset := map[int64]int{}
	for _, r := range logs.records(t, ackgap.LogDeadLettered) {
		perOffset[int64(r["offset"].(float64))]++
	}
	require.Equal(t, map[int64]int{0: 1, 1: 1}, perOffset, "each rejected record dead-lettered once")
	for _, r := range logs.records(t, kafkabroker.LogNotApplied) {
		require.Contains(t, r["err"], "test: not both records", "only the test's own nacks; a rejected record was logged as redelivered: %v", r)
	}
}

// TestBatchConsumerRejectedHeldBackLogged (issue 22, item 5): a record
// without an event id (rejected) behind a message of its key that fails
// once and is nacked in the same batch is nacked too, so that its key
// settles in order, and logged as rejected (LogRejectedHeldBack, with its
// dead-letter reason), never as a message not applied; it is
// dead-lettered when it comes again, and the message before it applied.
func TestBatchConsumerRejectedHeldBackLogged(t *testing.T) {
	t.Parallel()
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, 2)
	produceRecords(t, topic, []*sarama.ProducerMessage{
		record(t, seqEvent(t, "evt-flaky", "k-1", 1)), // offset 0
		noIDRecord("k-1", "k-1,2,"),                   // offset 1, same key
	})
	var failed atomic.Bool
	handler := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("test: provider timed out")
		}
		return b.apply(ctx, tx, msg)
	}
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "billing"}, Handler: handler})
	require.NoError(t, err)
	// Both records in one batch first (see TestBatchConsumerRejectedLoggedAsRejected).
	var met atomic.Bool
	together := func(ctx context.Context, msgs []*message.Message) []error {
		var offsets []int64
		for _, m := range msgs {
			if d, ok := ackgap.DeliveryFromContext(m.Context()); ok {
				offsets = append(offsets, d.Offset)
			}
		}
		if slices.Contains(offsets, 0) && slices.Contains(offsets, 1) {
			met.Store(true)
		}
		if met.Load() {
			return p.ProcessErrors(ctx, msgs)
		}
		errs := make([]error, len(msgs))
		for i := range errs {
			errs[i] = fmt.Errorf("test: not both records yet: %w", ackgap.ErrStoreUnavailable)
		}
		return errs
	}
	logs := &jsonLog{}
	cfg := parallelConfig(kafkaBrokers(t), group)
	cfg.NackResendSleep = 20 * time.Millisecond
	bc, err := kafkabroker.NewBatchConsumer(together, &kafkabroker.BatchConsumerConfig{
		ParallelConfig: *cfg, Topic: topic, BatchWait: 50 * time.Millisecond,
		DeadLetter: newPublisher(t), DeadLetterTopic: topic + ".dlq",
	}, router.SlogLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(context.Background()) }()
	t.Cleanup(func() { _ = bc.Close() })
	eventually(t, time.Minute, "evt-flaky applied", func() bool { return b.applied(t)["evt-flaky"] == 1 })
	eventually(t, time.Minute, "everything committed", func() bool { return committedOffset(t, group, topic, 0) == 2 })
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)

	held := logs.records(t, kafkabroker.LogRejectedHeldBack)
	require.NotEmpty(t, held, "the rejected record held behind the nacked one, said as it is")
	for _, r := range held {
		require.Equal(t, "WARN", r["level"])
		require.EqualValues(t, 1, r["offset"])
		require.Equal(t, ackgap.ReasonMissingEventID, r["reason"])
	}
	for _, r := range logs.records(t, kafkabroker.LogNotApplied) {
		if !strings.Contains(fmt.Sprint(r["err"]), "test: not both records") { // the test's own nacks aside
			require.NotEqualValues(t, 1, r["offset"], "the rejected record logged as not applied: %v", r)
		}
	}
	dead := logs.records(t, ackgap.LogDeadLettered)
	require.Len(t, dead, 1, "dead-lettered once, when it came again")
	require.EqualValues(t, 1, dead[0]["offset"])
}
