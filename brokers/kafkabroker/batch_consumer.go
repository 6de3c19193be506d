package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	wmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/deadletter"
	"github.com/ackgap/ackgap/internal/logfield"
)

// BatchFunc runs msgs as one batch, in one database transaction, and
// returns one error per message, in order: nil when the message may be
// acked (applied, or a duplicate), else why not; it returns only once the
// transaction committed or failed. batch.Processor's ProcessErrors method
// is one. [BatchConsumer] acks, dead-letters or nacks each message after it
// returned.
//
// msgs may hold several messages of one record key (up to
// BatchConsumerConfig.MaxPerKey), in offset order. A BatchFunc must apply
// them in that order and must not apply a message after an earlier one of
// its key that it did not apply (fail it instead): batch.Processor does
// both, by rounds, with the key it reads from the message's
// ackgap.Delivery (Key, HasKey).
type BatchFunc func(ctx context.Context, msgs []*message.Message) []error

// Defaults of [BatchConsumerConfig].
const (
	// MaxBatchDefault is the default BatchConsumerConfig.MaxBatch: at most
	// 64 messages per transaction, so that a per-message savepoint each
	// stays within PostgreSQL's per-backend subtransaction cache (64).
	MaxBatchDefault = 64
	// BatchWaitDefault is the default BatchConsumerConfig.BatchWait: how
	// long a batch waits for more messages after its first one.
	BatchWaitDefault = time.Millisecond
	// BatchWorkersDefault is the default BatchConsumerConfig.Workers:
	// batches in their transactions at once.
	BatchWorkersDefault = 4
	// BatchMaxAttemptsDefault is the default BatchConsumerConfig.MaxAttempts.
	BatchMaxAttemptsDefault = 5
	// MaxPerKeyDefault is the default BatchConsumerConfig.MaxPerKey: at
	// most 16 messages of one record key per batch (16 rounds).
	MaxPerKeyDefault = 16
)

// BatchConsumerConfig configures [NewBatchConsumer]. The embedded
// ParallelConfig configures the [ParallelSubscriber] underneath, with its
// defaults (OrderingKey, MaxInFlight 64 per partition). Fields left zero
// take the default named in their doc.
type BatchConsumerConfig struct {
	ParallelConfig
	// Topic is the topic to consume. Required.
	Topic string
	// MaxBatch is the most messages one batch (one transaction) holds.
	// Default MaxBatchDefault (64); at least 1.
	MaxBatch int
	// MaxPerKey is the most messages of one record key one batch holds,
	// under OrderingKey: a key's messages queued in its partition are
	// handed out together, in offset order, up to MaxPerKey and the
	// partition's room under MaxInFlight, and go into one batch, where
	// batch.Processor applies them one round after another. A hot key then
	// costs a transaction per MaxPerKey messages, not per message; each
	// round costs a savepoint and a BatchHandler call. 1 means one message
	// of a key per batch. Default MaxPerKeyDefault (16); at least 1, at
	// most MaxBatch.
	MaxPerKey int
	// BatchWait is how long a batch collects messages after its first one
	// before it runs (it runs at once when MaxBatch is reached). Default
	// BatchWaitDefault (1 ms); negative means no wait: only messages
	// already handed out join.
	BatchWait time.Duration
	// Workers is how many batches run at once, each in its own
	// transaction. Default BatchWorkersDefault (4); at least 1.
	Workers int
	// MaxAttempts is how many times a message whose handler keeps failing
	// (not ackgap.Permanent, not ackgap.ErrStoreUnavailable, not a
	// cancelled context) is tried, counted by this consumer, before it is
	// dead-lettered with reason ackgap.ReasonAttemptsExhausted. Default
	// BatchMaxAttemptsDefault (5); at least 1.
	MaxAttempts int
	// DeadLetter publishes rejected messages (a permanent error: no event
	// id, an id reused with another payload, ackgap.Permanent) and those
	// out of attempts to DeadLetterTopic, as the router does: a copy with
	// the message's payload, UUID and metadata, plus
	// ackgap.MetadataDeadLetterReason, Watermill's poison-queue keys
	// (reason_poisoned: the error's text; topic_poisoned: Topic;
	// handler_poisoned: "<consumer>/<Topic>", the inbox consumer's name,
	// or ConsumerGroup when the BatchFunc recorded no inbox report;
	// subscriber_poisoned: "kafkabroker.BatchConsumer") and the record's
	// ackgap.MetadataSourceTopic, MetadataSourcePartition and
	// MetadataSourceOffset, which name the record: a dead-letter reader
	// dedupes on them (a crash after the publish and before the offset
	// commit dead-letters the record again). The publish runs on a
	// context detached from shutdown, bounded by 30 s
	// (router.DeadLetterPublishTimeout). When it fails with an error
	// wrapping ackgap.ErrUnencodable a sanitised copy goes instead
	// (ackgap.MetadataDeadLetterSanitized); when it fails otherwise, or
	// the copy fails too, the message is nacked and redelivered, never
	// acked. Required.
	DeadLetter message.Publisher
	// DeadLetterTopic is the dead-letter topic. Required.
	DeadLetterTopic string
}

// WithDefaults returns a copy of c with every zero field set to its
// default.
func (c BatchConsumerConfig) WithDefaults() BatchConsumerConfig {
	c.ParallelConfig = c.ParallelConfig.WithDefaults()
	if c.MaxBatch == 0 {
		c.MaxBatch = MaxBatchDefault
	}
	if c.BatchWait == 0 {
		c.BatchWait = BatchWaitDefault
	}
	if c.Workers == 0 {
		c.Workers = BatchWorkersDefault
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = BatchMaxAttemptsDefault
	}
	if c.MaxPerKey == 0 {
		c.MaxPerKey = min(MaxPerKeyDefault, max(c.MaxBatch, 1))
	}
	return c
}

func (c BatchConsumerConfig) validate() error {
	var errs []error
	if err := c.ParallelConfig.validate(); err != nil {
		errs = append(errs, errors.Unwrap(err))
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("Topic is empty"))
	}
	if c.MaxBatch < 1 {
		errs = append(errs, fmt.Errorf("MaxBatch is %d, must be at least 1", c.MaxBatch))
	}
	if c.MaxPerKey < 1 || c.MaxPerKey > max(c.MaxBatch, 1) {
		errs = append(errs, fmt.Errorf("MaxPerKey is %d, must be at least 1 and at most MaxBatch (%d)", c.MaxPerKey, c.MaxBatch))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("Workers is %d, must be at least 1", c.Workers))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("MaxAttempts is %d, must be at least 1", c.MaxAttempts))
	}
	if c.DeadLetter == nil {
		errs = append(errs, errors.New("DeadLetter is nil: rejected messages need a dead-letter publisher"))
	}
	if c.DeadLetterTopic == "" {
		errs = append(errs, errors.New("DeadLetterTopic is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// BatchConsumer runs the messages of one Kafka topic through a
// [BatchFunc] in batches, one database transaction each (batch.Processor:
// one inbox statement, a savepoint per message, one commit), on top of a
// [ParallelSubscriber]. A batch is the messages the partitions have ready
// (up to MaxBatch, waiting up to BatchWait after the first), from any
// partition; Workers batches run at once.
//
// Order. Under OrderingKey (the default) the subscriber hands out the
// messages of one record key together, in offset order (up to MaxPerKey:
// the key's messages queued in its partition), and the key's next ones
// only after all of those were settled; they go into one batch, never
// split, so concurrent batches never share a key. The BatchFunc applies
// them in offset order (batch.Processor: in rounds, one message per key
// per round, all in the batch's one transaction). Per-key order holds. A
// batch may end short of MaxBatch when the next key's messages do not fit;
// they start the worker's next batch. Under OrderingPartition a batch
// holds at most one message per partition.
//
// Acks. Every message is acked, nacked or dead-lettered only after the
// BatchFunc returned, that is after the batch's commit (docs/design.md
// invariant 4), and its offset is committed by the subscriber's watermark
// commits: a message's ackgap.Delivery is settled confirmed once the
// group coordinator accepted a commit covering it.
//
// A failing message. The batch rolls back to the message's savepoint and
// the rest of the batch commits, except the later messages of its key,
// which the BatchFunc holds back (batch.ErrHeldBack). The failing message
// and those behind it are nacked: the subscriber hands them out again
// after NackResendSleep, and the failing message holds its key (nothing of
// its key overtakes it) and its partition's watermark until it is acked.
// A message held back behind an earlier one of its key in the batch that
// was nacked uses no attempt and is never dead-lettered for it; one that
// is rejected itself is logged as such ([LogRejectedHeldBack]) and
// dead-lettered when it comes again. A permanent error, or a message out
// of MaxAttempts, is published to DeadLetterTopic and then acked, freeing
// its key (a later message of its key in the same batch is settled on its
// own verdict); a failed dead-letter publish nacks it instead. A
// busy database (ackgap.ErrStoreUnavailable) or a cancelled context never
// dead-letters and uses no attempt.
//
// Dead letters are logged as the router logs them, at error, once per
// publish: ackgap.LogDeadLettered once the publish succeeded,
// ackgap.LogDeadLetterFailed (with publish_err) when it failed, with the
// fields event_id and consumer (from the message's last inbox report, else
// its event_id metadata and ConsumerGroup), message_uuid, reason,
// destination, attempts (this consumer's count, the last one included),
// partition, offset, and the message's error as the logger's error field;
// never the payload. An event id or UUID that is not plain text (bytes
// that are not UTF-8, control characters) is logged quoted with Go
// escapes, as the error text quotes it. A message that cannot be dead-lettered this way is
// redelivered until the publish succeeds.
//
// Run and Close may be called from different goroutines; Close is safe
// to call more than once.
type BatchConsumer struct {
	fn     BatchFunc
	cfg    BatchConsumerConfig
	sub    *ParallelSubscriber
	logger watermill.LoggerAdapter

	attemptsMu sync.Mutex
	attempts   map[offsetKey]int // failed attempts of messages not yet acked

	mu      sync.Mutex
	started bool
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when Run returns

	closeOnce sync.Once
	closeErr  error
}

// NewBatchConsumer returns a BatchConsumer running fn on the messages of
// cfg.Topic. It connects to Kafka only when Run is called. logger may be
// nil (no logs). It returns an error wrapping "invalid config" naming
// every bad field at once.
func NewBatchConsumer(fn BatchFunc, cfg *BatchConsumerConfig, logger watermill.LoggerAdapter) (*BatchConsumer, error) {
	if cfg == nil {
		return nil, errors.New("invalid config: BatchConsumerConfig is nil: Brokers, ConsumerGroup, Topic and DeadLetter are required")
	}
	c := cfg.WithDefaults()
	var errs []error
	if fn == nil {
		errs = append(errs, errors.New("invalid config: BatchFunc is nil"))
	}
	if err := c.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	sub, err := NewParallelSubscriber(&c.ParallelConfig, logger)
	if err != nil {
		return nil, err
	}
	return &BatchConsumer{
		fn: fn, cfg: c, sub: sub,
		logger:   logger.With(watermill.LogFields{"topic": c.Topic, "consumer_group": c.ConsumerGroup}),
		attempts: make(map[offsetKey]int),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
	}, nil
}

// Stats returns the underlying subscriber's partitions; see
// [ParallelSubscriber.Stats].
func (bc *BatchConsumer) Stats() []PartitionStats { return bc.sub.Stats() }

// Run joins the consumer group and runs batches until ctx ends or Close
// is called; then messages in flight get up to CloseTimeout, every
// finished watermark is committed and the group left (up to
// LeaveTimeout), and Run returns nil: within CloseTimeout + LeaveTimeout
// of the stop even when the broker or the coordinator lookup stopped
// answering (what was not committed is logged, [LogStopGaveUp]), plus the
// time a batch in its transaction takes to see its context cancelled. It
// returns an error when the brokers cannot be reached, and
// [ErrSubscriberClosed] when called after Close or a second time.
func (bc *BatchConsumer) Run(ctx context.Context) error {
	bc.mu.Lock()
	if bc.started {
		bc.mu.Unlock()
		return fmt.Errorf("kafkabroker: batch consumer already ran: %w", ErrSubscriberClosed)
	}
	bc.started = true
	bc.mu.Unlock()
	defer close(bc.done)
	select {
	case <-bc.closing:
		return ErrSubscriberClosed
	default:
	}
	keyRun := 1
	if bc.cfg.Ordering == OrderingKey {
		keyRun = bc.cfg.MaxPerKey
	}
	runs, err := bc.sub.subscribeRuns(ctx, bc.cfg.Topic, keyRun)
	if err != nil {
		return err
	}
	bc.logger.Info(LogBatchConsumerRunning, watermill.LogFields{
		"workers": bc.cfg.Workers, "max_batch": bc.cfg.MaxBatch, "ordering": bc.cfg.Ordering.String()})
	defer bc.logger.Info(LogBatchConsumerStopped, nil)
	// Batches outlive ctx by up to CloseTimeout, as messages in flight do.
	batchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	workersDone := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-bc.closing:
		case <-workersDone:
			return
		}
		t := time.NewTimer(bc.cfg.CloseTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-workersDone:
		}
	}()
	var wg sync.WaitGroup
	for range bc.cfg.Workers {
		wg.Go(func() { bc.work(batchCtx, runs) })
	}
	wg.Wait()
	close(workersDone)
	return nil
}

// Info-level log messages of [BatchConsumer.Run], as the router's "Running"
// and "Router closed": Run logs LogBatchConsumerRunning once it has
// subscribed (fields topic, consumer_group, workers, max_batch, ordering)
// and LogBatchConsumerStopped when it returns after that.
const (
	LogBatchConsumerRunning = "Batch consumer running"
	LogBatchConsumerStopped = "Batch consumer stopped"
)

// Close stops Run (see [ParallelSubscriber.Close]) and waits for it to
// return: within CloseTimeout + LeaveTimeout, with an error wrapping
// [ErrCloseTimedOut] when the last commits and the group leave did not
// finish in time (the broker or the coordinator lookup stopped
// answering; [LogStopGaveUp] says what was not committed). Later calls
// return the first call's result.
func (bc *BatchConsumer) Close() error {
	bc.closeOnce.Do(func() {
		close(bc.closing)
		bc.closeErr = bc.sub.Close()
		bc.mu.Lock()
		started := bc.started
		bc.mu.Unlock()
		if started {
			<-bc.done
		}
	})
	return bc.closeErr
}

// work runs batches from runs until it is closed.
func (bc *BatchConsumer) work(ctx context.Context, runs <-chan []*message.Message) {
	var carry []*message.Message // a run that did not fit the last batch
	for {
		first := carry
		if first == nil {
			r, ok := <-runs
			if !ok {
				return
			}
			first = r
		}
		var batch []*message.Message
		batch, carry = bc.collect(runs, first)
		bc.process(ctx, batch)
	}
}

// collect returns a batch starting with the run first: the runs handed
// out within BatchWait, up to MaxBatch messages. A run that does not fit
// ends the batch and is returned as carry, to start the next one: a run is
// never split, so a key's messages stay in one batch.
func (bc *BatchConsumer) collect(runs <-chan []*message.Message, first []*message.Message) (batch, carry []*message.Message) {
	batch = make([]*message.Message, 0, bc.cfg.MaxBatch)
	batch = append(batch, first...)
	var wait <-chan time.Time
	if bc.cfg.BatchWait > 0 {
		t := time.NewTimer(bc.cfg.BatchWait)
		defer t.Stop()
		wait = t.C
	}
	for len(batch) < bc.cfg.MaxBatch {
		var r []*message.Message
		var ok bool
		if wait == nil {
			select {
			case r, ok = <-runs:
			default:
				return batch, nil
			}
		} else {
			select {
			case r, ok = <-runs:
			case <-wait:
				return batch, nil
			}
		}
		if !ok {
			return batch, nil
		}
		if len(batch)+len(r) > bc.cfg.MaxBatch {
			return batch, r
		}
		batch = append(batch, r...)
	}
	return batch, nil
}

// process runs batch through the BatchFunc and settles every message. A
// message that failed behind an earlier message of its key that was not
// acked is held back, not at fault.
func (bc *BatchConsumer) process(ctx context.Context, batch []*message.Message) {
	verdicts := bc.fn(ctx, batch)
	if len(verdicts) != len(batch) {
		err := fmt.Errorf("kafkabroker: BatchFunc returned %d verdicts for %d messages", len(verdicts), len(batch))
		bc.logger.Error("Batch not settled; its messages are redelivered", err, nil)
		for _, m := range batch {
			m.Nack()
		}
		return
	}
	// Per key, whether a message failed earlier in batch (its later ones
	// were held back by the BatchFunc, at no fault of theirs), and whether
	// one was nacked (not dead-lettered and acked).
	var failed, nacked map[recordKeyOf]bool
	for i, m := range batch {
		err := verdicts[i]
		if err == nil {
			bc.settle(m, nil, false, false)
			continue
		}
		k, hasKey := keyOfRecord(m)
		acked := bc.settle(m, err, hasKey && failed[k], hasKey && nacked[k])
		if hasKey {
			if failed == nil {
				failed, nacked = make(map[recordKeyOf]bool), make(map[recordKeyOf]bool)
			}
			failed[k] = true
			nacked[k] = nacked[k] || !acked
		}
	}
}

// recordKeyOf is a record key within its partition.
type recordKeyOf struct {
	partition int32
	key       string
}

func keyOfRecord(m *message.Message) (recordKeyOf, bool) {
	r, ok := recordFromContext(m.Context())
	if !ok {
		return recordKeyOf{}, false
	}
	return recordKeyOf{r.partition, string(r.key)}, true
}

// settle acks m (err nil), dead-letters and acks it (permanent, or out
// of attempts), or nacks it. behindFailed (an earlier message of its key
// in the batch failed, so the BatchFunc held m back) nacks a message that
// is not rejected without using an attempt; behindNacked (that earlier
// message was nacked) nacks a rejected one too, to be dead-lettered when
// it comes again. It reports whether m was acked.
func (bc *BatchConsumer) settle(m *message.Message, err error, behindFailed, behindNacked bool) bool {
	k, hasKey := bc.offsetOf(m)
	if err == nil {
		bc.forget(k, hasKey)
		m.Ack()
		return true
	}
	reason, attempts := "", 0
	switch {
	case behindNacked && ackgap.IsPermanent(err):
		// Rejected, but behind its key's nacked message: dead-lettered
		// when it comes again after it, so the key's messages settle in
		// order. Said as it is, not as a failure.
		warn(bc.logger, LogRejectedHeldBack, err, bc.nackFields(m, k, hasKey).Add(watermill.LogFields{"reason": reasonOf(err)}))
		m.Nack()
		return false
	case behindFailed && !ackgap.IsPermanent(err):
		// Behind its key's failed message: redelivered after it, its own
		// attempts untouched.
	case ackgap.IsPermanent(err):
		attempts = bc.failed(k, hasKey)
		reason = reasonOf(err)
	case errors.Is(err, ackgap.ErrStoreUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		// The database or the shutdown, not the message: no attempt used.
	case hasKey:
		if attempts = bc.failed(k, hasKey); attempts >= bc.cfg.MaxAttempts {
			reason = ackgap.ReasonAttemptsExhausted
		}
	}
	if reason == "" {
		// At warn, as the router logs its nacks: the message is redelivered.
		warn(bc.logger, LogNotApplied, err, bc.nackFields(m, k, hasKey))
		m.Nack()
		return false
	}
	if bc.deadLetter(m, err, reason, attempts) != nil {
		m.Nack() // logged: redelivered, never acked without its dead-letter copy
		return false
	}
	bc.forget(k, hasKey)
	m.Ack()
	return true
}

// nackFields are the log fields of a nacked message: its event id
// (escaped: internal/logfield), partition and offset.
func (bc *BatchConsumer) nackFields(m *message.Message, k offsetKey, hasKey bool) watermill.LogFields {
	fields := watermill.LogFields{"event_id": logfield.ID(m.Metadata.Get(ackgap.MetadataEventIDKey))}
	if hasKey {
		fields["partition"], fields["offset"] = k.partition, k.offset
	}
	return fields
}

// reasonOf is a permanent error's dead-letter reason, ackgap.ReasonPermanent
// when it names none.
func reasonOf(err error) string {
	if r := ackgap.ReasonOf(err); r != "" {
		return r
	}
	return ackgap.ReasonPermanent
}

// batchConsumerName is what Watermill's router would record as the
// subscriber of a message (metadata key subscriber_poisoned): the type's
// name without its pointer.
const batchConsumerName = "kafkabroker.BatchConsumer"

// LogNotApplied is the message the BatchConsumer logs, at warn, for a
// message it nacks (not applied: a failed handler, a busy database, held
// behind an earlier message of its key), with its event id, partition,
// offset and the error (field "err"); the message is redelivered after
// NackResendSleep.
const LogNotApplied = "Message not applied; it is redelivered after NackResendSleep and holds its key"

// LogRejectedHeldBack is the message the BatchConsumer logs, at warn, for
// a rejected message (a permanent error) that sits behind an earlier
// message of its record key that was nacked in the same batch: it is
// nacked too, so that its key's messages settle in order, and
// dead-lettered when it comes again after that one (ackgap.LogDeadLettered
// then). Fields: event_id, partition, offset, reason (the dead-letter
// reason it will carry) and the error (field "err").
const LogRejectedHeldBack = "Message rejected; dead-lettered when redelivered after the earlier message of its key"

// deadLetter publishes a copy of m to DeadLetterTopic, as the router's
// dead-letter path does (internal/deadletter): m's payload, UUID and
// metadata plus ackgap.MetadataDeadLetterReason, Watermill's poison-queue
// keys (reason_poisoned: err's text; topic_poisoned: Topic;
// handler_poisoned: "<consumer>/<topic>", as the router names its
// handlers; subscriber_poisoned: "kafkabroker.BatchConsumer") and the
// record's source coordinates, on a detached context bounded by 30 s,
// falling back to a sanitised copy when DeadLetter returns
// ackgap.ErrUnencodable. It logs ackgap.LogDeadLettered or
// ackgap.LogDeadLetterFailed at error, and returns the publish error.
func (bc *BatchConsumer) deadLetter(m *message.Message, err error, reason string, attempts int) error {
	eventID, consumer := m.Metadata.Get(ackgap.MetadataEventIDKey), bc.cfg.ConsumerGroup
	d, hasDelivery := ackgap.DeliveryFromContext(m.Context())
	if hasDelivery {
		if reps := d.Inbox(); len(reps) > 0 {
			// What the inbox checked: its consumer, and the event id it
			// extracted ("" for one refused as invalid text).
			last := reps[len(reps)-1]
			eventID, consumer = last.EventID, last.Consumer
		}
	}
	dl := message.NewMessage(m.UUID, m.Payload)
	for key, v := range m.Metadata {
		dl.Metadata.Set(key, v)
	}
	dl.SetContext(m.Context())
	deadletter.Stamp(dl, reason)
	dl.Metadata.Set(wmw.ReasonForPoisonedKey, err.Error())
	dl.Metadata.Set(wmw.PoisonedTopicKey, bc.cfg.Topic)
	dl.Metadata.Set(wmw.PoisonedHandlerKey, consumer+"/"+bc.cfg.Topic)
	dl.Metadata.Set(wmw.PoisonedSubscriberKey, batchConsumerName)
	fields := watermill.LogFields{
		"event_id": logfield.ID(eventID), "consumer": consumer, "message_uuid": logfield.ID(m.UUID),
		"reason": reason, "destination": bc.cfg.DeadLetterTopic, "attempts": attempts,
	}
	if hasDelivery && d.HasOffset {
		fields["partition"], fields["offset"] = d.Partition, d.Offset
	}
	return deadletter.Publish(bc.cfg.DeadLetter, bc.logger, bc.cfg.DeadLetterTopic, dl, err, fields)
}

// offsetOf returns m's topic, partition and offset.
func (bc *BatchConsumer) offsetOf(m *message.Message) (offsetKey, bool) {
	r, ok := recordFromContext(m.Context())
	if !ok {
		return offsetKey{}, false
	}
	return offsetKey{partitionKey{bc.cfg.Topic, r.partition}, r.offset}, true
}

// failed counts one more failed attempt of k and returns the count; 1
// for a message without a record (not counted).
func (bc *BatchConsumer) failed(k offsetKey, ok bool) int {
	if !ok {
		return 1
	}
	bc.attemptsMu.Lock()
	defer bc.attemptsMu.Unlock()
	bc.attempts[k]++
	return bc.attempts[k]
}

func (bc *BatchConsumer) forget(k offsetKey, ok bool) {
	if !ok {
		return
	}
	bc.attemptsMu.Lock()
	delete(bc.attempts, k)
	bc.attemptsMu.Unlock()
}
