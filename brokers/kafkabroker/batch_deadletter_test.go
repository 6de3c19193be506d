package kafkabroker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	wmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

// jsonLog is a log/slog JSON sink at warn level, as an operator who keeps
// only warnings and errors would run: what it drops was logged below warn.
type jsonLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *jsonLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *jsonLog) logger() watermill.LoggerAdapter {
	return watermill.NewSlogLogger(slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

func (l *jsonLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records returns the records whose msg is msg.
func (l *jsonLog) records(t testing.TB, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.text()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// produceRecords writes recs to partition 0 of topic, in order, with one
// Sarama producer: unlike produce, a record may lack an event id, as from
// a producer that does not use kafkabroker.
func produceRecords(t testing.TB, topic string, recs []*sarama.ProducerMessage) {
	t.Helper()
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	sc.Producer.Return.Successes = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Idempotent = true
	sc.Net.MaxOpenRequests = 1
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer(kafkaBrokers(t), sc)
	require.NoError(t, err)
	defer producer.Close()
	for _, r := range recs {
		r.Topic, r.Partition = topic, 0
	}
	require.NoError(t, producer.SendMessages(recs))
}

// record marshals msg as kafkabroker's publisher would.
func record(t testing.TB, msg *message.Message) *sarama.ProducerMessage {
	t.Helper()
	pm, err := kafkabroker.Marshaler{}.Marshal("", msg)
	require.NoError(t, err)
	return pm
}

// noIDRecord is a record of key key without an event id header.
func noIDRecord(key, payload string) *sarama.ProducerMessage {
	return &sarama.ProducerMessage{Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(payload),
		Headers: []sarama.RecordHeader{{Key: []byte("traceparent"), Value: []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}}}
}

// bySourceOffset groups dead-letter copies by the source offset they
// carry, after checking their source topic and partition.
func bySourceOffset(t testing.TB, topic string, copies []*message.Message) map[int64][]*message.Message {
	t.Helper()
	out := map[int64][]*message.Message{}
	for _, c := range copies {
		require.Equal(t, topic, c.Metadata.Get(ackgap.MetadataSourceTopic))
		require.Equal(t, "0", c.Metadata.Get(ackgap.MetadataSourcePartition))
		off, err := strconv.ParseInt(c.Metadata.Get(ackgap.MetadataSourceOffset), 10, 64)
		require.NoError(t, err, "source offset of %v", c.Metadata)
		out[off] = append(out[off], c)
	}
	return out
}

// readDeadLetters reads every record of dlq once the group committed
// everything: what the consumer dead-lettered.
func readDeadLetters(t testing.TB, dlq string) []*message.Message {
	t.Helper()
	n := topicSize(t, dlq)
	require.Positive(t, n, "nothing dead-lettered")
	return readAll(t, dlq, int(n))
}

// deadLetterSecret is in the payload of the dead-lettered messages and must
// never be logged.
const deadLetterSecret = "4242-SECRET-CARD"

// TestBatchConsumerDeadLettersLikeRouter: one partition holds evt-1
// (applied), evt-poison (its handler returns ackgap.Permanent), a record
// without an event id (rejected by the inbox), and evt-2 (applied). Both
// rejected records reach the dead-letter topic with their original bytes,
// the reason, the error text and the rest of Watermill's poison-queue
// keys, their source topic, partition and offset, and the event id when
// they had one; each copy is logged once, at error (a warn-level logger
// shows it), as the router logs it, without its payload. Every offset is
// committed. Each pass of a rejected message through the inbox published
// exactly one copy and logged it once.
func TestBatchConsumerDeadLettersLikeRouter(t *testing.T) {
	t.Parallel()
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, 1)
	poison := seqEvent(t, "evt-poison", "k-poison", 1)
	poison.Payload = []byte("k-poison,1," + deadLetterSecret)
	poison.Metadata.Set("tenant", "acme")
	poison.Metadata.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	produceRecords(t, topic, []*sarama.ProducerMessage{
		record(t, seqEvent(t, "evt-1", "k-0", 1)),          // offset 0
		record(t, poison),                                  // offset 1
		noIDRecord("k-noid", "k-noid,1,"+deadLetterSecret), // offset 2
		record(t, seqEvent(t, "evt-2", "k-0", 2)),          // offset 3
	})
	handler := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		if msg.Metadata.Get(ackgap.MetadataEventIDKey) == "evt-poison" {
			return ackgap.Permanent(ackgap.ReasonInvalidData, errors.New("test: the order does not exist"))
		}
		return b.apply(ctx, tx, msg)
	}
	rep := &reports{}
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing", Observer: rep.observe},
		Handler:     handler,
	})
	require.NoError(t, err)
	logs := &jsonLog{}
	bc, err := kafkabroker.NewBatchConsumer(p.ProcessErrors, &kafkabroker.BatchConsumerConfig{
		ParallelConfig:  *parallelConfig(kafkaBrokers(t), group),
		Topic:           topic,
		DeadLetter:      newPublisher(t),
		DeadLetterTopic: topic + ".dlq",
	}, logs.logger())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(context.Background()) }()
	t.Cleanup(func() { _ = bc.Close() })

	eventually(t, 2*time.Minute, "evt-1 and evt-2 applied", func() bool { return rep.count(ackgap.OutcomeApplied) == 2 })
	eventually(t, time.Minute, "everything committed", func() bool { return committedOffset(t, group, topic, 0) == 4 })
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)
	require.Equal(t, map[string]int{"evt-1": 1, "evt-2": 1}, b.applied(t))

	dead := bySourceOffset(t, topic, readDeadLetters(t, topic+".dlq"))
	require.Len(t, dead, 2, "the two rejected records, by source offset")
	want := map[int64]struct {
		eventID, reason, errText, payload string
	}{
		1: {"evt-poison", ackgap.ReasonInvalidData, "test: the order does not exist", string(poison.Payload)},
		2: {"", ackgap.ReasonMissingEventID, "no event id", "k-noid,1," + deadLetterSecret},
	}
	passes := map[int64]int{
		1: len(rep.outcomes("evt-poison")),
		2: len(rep.outcomes("")),
	}
	for off, w := range want {
		copies := dead[off]
		require.NotEmpty(t, copies, "offset %d not dead-lettered", off)
		require.Equal(t, passes[off], len(copies), "offset %d: one copy per pass through the inbox", off)
		for _, c := range copies {
			require.Equal(t, w.payload, string(c.Payload), "original bytes")
			require.Equal(t, w.eventID, c.Metadata.Get(ackgap.MetadataEventIDKey))
			require.Equal(t, w.reason, c.Metadata.Get(ackgap.MetadataDeadLetterReason))
			require.Contains(t, c.Metadata.Get(wmw.ReasonForPoisonedKey), w.errText)
			require.Equal(t, topic, c.Metadata.Get(wmw.PoisonedTopicKey))
			require.Equal(t, "billing/"+topic, c.Metadata.Get(wmw.PoisonedHandlerKey))
			require.Equal(t, "kafkabroker.BatchConsumer", c.Metadata.Get(wmw.PoisonedSubscriberKey))
			require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", c.Metadata.Get("traceparent"))
		}
	}
	require.Equal(t, "acme", dead[1][0].Metadata.Get("tenant"), "the original metadata travels")

	logged := logs.records(t, ackgap.LogDeadLettered)
	perOffset := map[int64]int{}
	for _, r := range logged {
		require.Equal(t, "ERROR", r["level"])
		off := int64(r["offset"].(float64))
		perOffset[off]++
		w := want[off]
		require.Equal(t, w.eventID, r["event_id"], "offset %d", off)
		require.Equal(t, w.reason, r["reason"])
		require.Contains(t, r["error"], w.errText)
		require.Equal(t, "billing", r["consumer"])
		require.Equal(t, topic+".dlq", r["destination"])
		require.EqualValues(t, 0, r["partition"])
		require.Positive(t, r["attempts"])
		require.Contains(t, r, "message_uuid")
	}
	require.Equal(t, map[int64]int{1: len(dead[1]), 2: len(dead[2])}, perOffset, "each copy logged once")
	require.Empty(t, logs.records(t, ackgap.LogDeadLetterFailed))
	require.NotContains(t, logs.text(), deadLetterSecret, "payloads are never logged")
	assertNothingRedelivered(t, topic, group)
}

// failingDeadLetter is a dead-letter publisher whose first fail publishes
// fail (the first waits for release and signals held first); the others
// go to pub.
type failingDeadLetter struct {
	pub           message.Publisher
	held, release chan struct{}

	mu     sync.Mutex
	fail   int
	failed int
}

func (d *failingDeadLetter) Publish(topic string, msgs ...*message.Message) error {
	d.mu.Lock()
	failing, first := d.failed < d.fail, d.failed == 0
	if failing {
		d.failed++
	}
	d.mu.Unlock()
	if first && failing {
		close(d.held)
		<-d.release
	}
	if failing {
		return errInjectedDeadLetter
	}
	return d.pub.Publish(topic, msgs...)
}

func (d *failingDeadLetter) Close() error { return nil }

// settlements records how each delivery of one event id was settled.
type settlements struct {
	eventID string
	mu      sync.Mutex
	acked   []bool
}

// wrap returns fn with every delivery of s.eventID watched.
func (s *settlements) wrap(fn kafkabroker.BatchFunc) kafkabroker.BatchFunc {
	return func(ctx context.Context, msgs []*message.Message) []error {
		for _, m := range msgs {
			if m.Metadata.Get(ackgap.MetadataEventIDKey) != s.eventID {
				continue
			}
			d, ok := ackgap.DeliveryFromContext(m.Context())
			if ok {
				d.OnSettled(func(st ackgap.Settlement) {
					s.mu.Lock()
					s.acked = append(s.acked, st.Acked)
					s.mu.Unlock()
				})
			}
		}
		return fn(ctx, msgs)
	}
}

func (s *settlements) snapshot() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.acked...)
}

// TestBatchConsumerDeadLetterPublishFails: the first two dead-letter
// publishes of a permanently failing message fail. While the first is
// held, the group's committed offset has not passed the message; each
// failure is logged at error (ackgap.LogDeadLetterFailed, with the
// publish error), and that delivery is nacked, never acked, and the
// message redelivered (its handler runs again), until a publish succeeds:
// then it is acked and its offset committed. The message behind it, of
// the same key, is applied after it.
func TestBatchConsumerDeadLetterPublishFails(t *testing.T) {
	t.Parallel()
	const failures = 2
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, 1)
	poison := seqEvent(t, "evt-poison", "k-0", 1)
	produceRecords(t, topic, []*sarama.ProducerMessage{
		record(t, seqEvent(t, "evt-1", "k-0", 1)), // offset 0
		record(t, poison),                         // offset 1
		record(t, seqEvent(t, "evt-2", "k-0", 2)), // offset 2
	})
	handler := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		if msg.Metadata.Get(ackgap.MetadataEventIDKey) == "evt-poison" {
			return ackgap.Permanent("account_closed", nil)
		}
		return b.apply(ctx, tx, msg)
	}
	rep := &reports{}
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing", Observer: rep.observe},
		Handler:     handler,
	})
	require.NoError(t, err)
	dead := &failingDeadLetter{pub: newPublisher(t), fail: failures, held: make(chan struct{}), release: make(chan struct{})}
	settled := &settlements{eventID: "evt-poison"}
	logs := &jsonLog{}
	cfg := parallelConfig(kafkaBrokers(t), group)
	cfg.NackResendSleep = 20 * time.Millisecond
	bc, err := kafkabroker.NewBatchConsumer(settled.wrap(p.ProcessErrors), &kafkabroker.BatchConsumerConfig{
		ParallelConfig: *cfg, Topic: topic, DeadLetter: dead, DeadLetterTopic: topic + ".dlq",
	}, logs.logger())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(context.Background()) }()
	t.Cleanup(func() { _ = bc.Close() })

	waitClosed(t, dead.held, "the first dead-letter publish")
	require.LessOrEqual(t, committedOffset(t, group, topic, 0), int64(1),
		"the offset moved past the message before its dead-letter publish")
	close(dead.release)
	eventually(t, 2*time.Minute, "everything committed", func() bool { return committedOffset(t, group, topic, 0) == 3 })
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)

	require.Equal(t, map[string]int{"evt-1": 1, "evt-2": 1}, b.applied(t), "evt-2 applied once, after the poison message")
	copies := readDeadLetters(t, topic+".dlq")
	for _, c := range copies {
		require.Equal(t, "evt-poison", c.Metadata.Get(ackgap.MetadataEventIDKey))
		require.Equal(t, "account_closed", c.Metadata.Get(ackgap.MetadataDeadLetterReason))
		require.Equal(t, "1", c.Metadata.Get(ackgap.MetadataSourceOffset))
	}
	acks := settled.snapshot()
	require.GreaterOrEqual(t, len(acks), failures+1)
	require.Equal(t, []bool{false, false, true}, acks[:failures+1], "nacked after each failed publish, acked after the first that succeeded")
	nacks := 0
	for _, a := range acks {
		if !a {
			nacks++
		}
	}
	require.Equal(t, failures, nacks, "only a failed publish nacks")
	require.Len(t, rep.outcomes("evt-poison"), len(acks), "the handler ran once per delivery: redelivered after each nack")

	failed := logs.records(t, ackgap.LogDeadLetterFailed)
	require.Len(t, failed, failures, "each failed publish logged once")
	for _, r := range failed {
		require.Equal(t, "ERROR", r["level"])
		require.Contains(t, r["publish_err"], errInjectedDeadLetter.Error())
		require.Equal(t, "evt-poison", r["event_id"])
		require.Equal(t, "account_closed", r["reason"])
		require.Equal(t, topic+".dlq", r["destination"])
	}
	require.Len(t, logs.records(t, ackgap.LogDeadLettered), len(copies), "each copy logged once")
	assertNothingRedelivered(t, topic, group)
}

// limitedDeadLetter stands for a dead-letter broker that cannot carry more
// than max metadata keys (as SQS cannot carry more than 10 message
// attributes).
type limitedDeadLetter struct {
	message.Publisher
	max int
}

func (p limitedDeadLetter) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		if len(m.Metadata) > p.max {
			return fmt.Errorf("limited: %d metadata keys, at most %d: %w", len(m.Metadata), p.max, ackgap.ErrUnencodable)
		}
	}
	return p.Publisher.Publish(topic, msgs...)
}

// TestBatchConsumerDeadLetterSanitised: a dead-letter broker that cannot
// encode the copy (ackgap.ErrUnencodable) gets the sanitised copy, as from
// the router: the original payload, event id, reason, trace context and
// source coordinates, the publisher's error, and every original metadata
// value (Watermill's poison keys included) in the attachment. The message
// is acked (its offset committed) and the copy logged once, with the
// field sanitized.
func TestBatchConsumerDeadLetterSanitised(t *testing.T) {
	t.Parallel()
	const maxKeys = 9
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, 1)
	poison := event(t, "evt-poison", "k-poison") // event id, partition key, traceparent, tenant
	produceRecords(t, topic, []*sarama.ProducerMessage{record(t, poison)})
	rep := &reports{}
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing", Observer: rep.observe},
		Handler: func(context.Context, pgx.Tx, *message.Message) error {
			return ackgap.Permanent("account_closed", nil)
		},
	})
	require.NoError(t, err)
	logs := &jsonLog{}
	bc, err := kafkabroker.NewBatchConsumer(p.ProcessErrors, &kafkabroker.BatchConsumerConfig{
		ParallelConfig: *parallelConfig(kafkaBrokers(t), group), Topic: topic,
		DeadLetter: limitedDeadLetter{Publisher: newPublisher(t), max: maxKeys}, DeadLetterTopic: topic + ".dlq",
	}, logs.logger())
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(context.Background()) }()
	t.Cleanup(func() { _ = bc.Close() })
	eventually(t, 2*time.Minute, "evt-poison rejected", func() bool { return rep.count(ackgap.OutcomeRejected) > 0 })
	eventually(t, time.Minute, "committed", func() bool { return committedOffset(t, group, topic, 0) == 1 })
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)

	copies := readDeadLetters(t, topic+".dlq")
	for _, c := range copies {
		require.Equal(t, string(poison.Payload), string(c.Payload))
		require.Equal(t, "evt-poison", c.Metadata.Get(ackgap.MetadataEventIDKey))
		require.Equal(t, "account_closed", c.Metadata.Get(ackgap.MetadataDeadLetterReason))
		require.Equal(t, poison.Metadata.Get("traceparent"), c.Metadata.Get("traceparent"))
		require.Equal(t, topic, c.Metadata.Get(ackgap.MetadataSourceTopic))
		require.Equal(t, "0", c.Metadata.Get(ackgap.MetadataSourcePartition))
		require.Equal(t, "0", c.Metadata.Get(ackgap.MetadataSourceOffset))
		require.Contains(t, c.Metadata.Get(ackgap.MetadataDeadLetterSanitized), "at most 9")
		require.LessOrEqual(t, len(c.Metadata), maxKeys, "the copy fits")
		var original map[string][]byte
		require.NoError(t, json.Unmarshal([]byte(c.Metadata.Get(ackgap.MetadataOriginalMetadata)), &original))
		for k, v := range poison.Metadata {
			require.Equal(t, []byte(v), original[k], "original metadata %q", k)
		}
		require.Equal(t, []byte("kafkabroker.BatchConsumer"), original[wmw.PoisonedSubscriberKey])
		require.Contains(t, string(original[wmw.ReasonForPoisonedKey]), "account_closed")
	}
	logged := logs.records(t, ackgap.LogDeadLettered)
	require.Len(t, logged, len(copies), "each copy logged once")
	for _, r := range logged {
		require.Contains(t, r["sanitized"], "at most 9")
	}
	require.Empty(t, logs.records(t, ackgap.LogDeadLetterFailed))
}

// TestBatchConsumerNackLoggedAtWarn: a message whose handler fails once
// (not permanent) is nacked and logged at warn, as the router logs its
// nacks (kafkabroker.LogNotApplied, with its event id, partition, offset
// and error), so an operator who keeps warnings sees it; it is then
// applied once.
func TestBatchConsumerNackLoggedAtWarn(t *testing.T) {
	t.Parallel()
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, 1)
	produceRecords(t, topic, []*sarama.ProducerMessage{record(t, seqEvent(t, "evt-flaky", "k-0", 1))})
	var failed atomic.Bool
	handler := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("provider of reference data timed out")
		}
		return b.apply(ctx, tx, msg)
	}
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "billing"}, Handler: handler})
	require.NoError(t, err)
	logs := &jsonLog{}
	cfg := parallelConfig(kafkaBrokers(t), group)
	cfg.NackResendSleep = 20 * time.Millisecond
	bc, err := kafkabroker.NewBatchConsumer(p.ProcessErrors, &kafkabroker.BatchConsumerConfig{
		ParallelConfig: *cfg, Topic: topic, DeadLetter: newPublisher(t), DeadLetterTopic: topic + ".dlq",
	}, router.SlogLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(context.Background()) }()
	eventually(t, time.Minute, "applied", func() bool { return b.applied(t)["evt-flaky"] == 1 })
	require.NoError(t, bc.Close())
	require.NoError(t, <-done)

	// At least the handler's failure; a busy machine may add nacks of its
	// own (a busy database), logged the same way.
	var found bool
	for _, r := range logs.records(t, kafkabroker.LogNotApplied) {
		require.Equal(t, "WARN", r["level"])
		require.Equal(t, "evt-flaky", r["event_id"])
		require.EqualValues(t, 0, r["partition"])
		require.EqualValues(t, 0, r["offset"])
		found = found || strings.Contains(fmt.Sprint(r["err"]), "provider of reference data timed out")
	}
	require.True(t, found, "the handler's failure logged at warn with its error")
}

// TestBatchConsumerLogsStartAndStop: Run logs at info once it has
// subscribed and when it returns, as the router logs "Running" and
// "Router closed", so an operator sees the consumer started (issue 25).
func TestBatchConsumerLogsStartAndStop(t *testing.T) {
	t.Parallel()
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, 1)
	produceRecords(t, topic, []*sarama.ProducerMessage{record(t, seqEvent(t, "evt-1", "k-0", 1))})
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "billing"}, Handler: b.apply})
	require.NoError(t, err)
	logs := &jsonLog{}
	bc, err := kafkabroker.NewBatchConsumer(p.ProcessErrors, &kafkabroker.BatchConsumerConfig{
		ParallelConfig: *parallelConfig(kafkaBrokers(t), group), Topic: topic, DeadLetter: newPublisher(t), DeadLetterTopic: topic + ".dlq",
	}, router.SlogLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- bc.Run(context.Background()) }()
	eventually(t, time.Minute, "applied", func() bool { return b.applied(t)["evt-1"] == 1 })
	running := logs.records(t, kafkabroker.LogBatchConsumerRunning)
	require.Len(t, running, 1, "logged once it subscribed, before the first message was applied")
	require.Equal(t, "INFO", running[0]["level"])
	require.Equal(t, topic, running[0]["topic"])
	require.Equal(t, group, running[0]["consumer_group"])
	require.EqualValues(t, kafkabroker.BatchWorkersDefault, running[0]["workers"])
	require.Empty(t, logs.records(t, kafkabroker.LogBatchConsumerStopped), "not stopped yet")

	require.NoError(t, bc.Close())
	require.NoError(t, <-done)
	stopped := logs.records(t, kafkabroker.LogBatchConsumerStopped)
	require.Len(t, stopped, 1)
	require.Equal(t, "INFO", stopped[0]["level"])
	require.Equal(t, topic, stopped[0]["topic"])
}
