package kafkabroker

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
)

// The tracker links a message handed to the router with watermill-kafka's
// handling of its record: after an ack watermill-kafka marks the offset and
// (auto-commit off) commits it, on the claim's goroutine. The tracker sees
// both through a wrapped ConsumerGroupSession, installed with
// watermill-kafka's SaramaTracer hook, so Close can wait for the commit
// instead of racing it.
//
// The tracker also fills ackgap's confirmation hook (ackgap.Delivery in the
// message context): it settles each message handed out with the time of
// its ack and the time the group coordinator accepted the offset commit
// carrying it, or with an error wrapping ackgap.ErrAckNotConfirmed and
// ErrCommitRefused when the coordinator refused it or did not answer.
// Sarama's ConsumerGroupSession.Commit reports a failed commit only on the
// group's error channel, so the tracker sends every commit itself
// (sendOffsetCommit, through a Kafka client of the Subscriber's own, with
// the session's generation and member id) and reads the answer per
// partition. With interval commits the periodic commit is the tracker's
// too (a committer per group session, started in Setup and flushed in
// Cleanup) rather than Sarama's ticker, which cannot be observed.

type partitionKey struct {
	topic     string
	partition int32
}

type offsetKey struct {
	partitionKey
	offset int64
}

// delivery is one message handed to the router.
type delivery struct {
	key offsetKey
	// committed is closed once the offset was marked and, with per-ack
	// commits, the commit request returned.
	committed chan struct{}
	// claimDone is closed when the partition's claim ended: an ack after
	// that commits nothing.
	claimDone <-chan struct{}
	// ack is the delivery as observers see it (ackgap.DeliveryFromContext);
	// it is settled exactly once.
	ack *ackgap.Delivery
	// ackedAt is when MarkMessage saw the ack; confirmedAt, with per-ack
	// commits, when the coordinator's answer accepting the commit came
	// back, or commitErr why it was not accepted. All are written before
	// committed is closed.
	ackedAt, confirmedAt time.Time
	commitErr            error
}

// Why a delivery was settled without a confirmed commit.
var (
	errClaimEnded = fmt.Errorf("%w: kafkabroker: the partition's claim ended (rebalance or close) before the offset was marked", ackgap.ErrAckNotConfirmed)
	errStopped    = fmt.Errorf("%w: kafkabroker: the subscriber stopped (CloseTimeout) before the offset commit returned", ackgap.ErrAckNotConfirmed)
	errGivenUp    = errors.New("kafkabroker: the subscriber stopped (CloseTimeout) before the message was acked or nacked")
	errNoSession  = fmt.Errorf("%w: kafkabroker: no committer for the group session (a bug)", ackgap.ErrAckNotConfirmed)
	errNoClient   = errors.New("kafkabroker: no Kafka client to commit with (a bug)")
)

// settleCommitted settles d after its offset was marked (committed is
// closed): with per-ack commits the commit has been answered; with
// interval commits the session's committer settles it after the next
// commit.
func (t *tracker) settleCommitted(d *delivery) {
	if t.autoCommit {
		return
	}
	if d.commitErr != nil {
		d.ack.Settle(ackgap.Settlement{Acked: true, At: d.ackedAt, Err: d.commitErr})
		return
	}
	d.ack.Settle(ackgap.Settlement{Acked: true, At: d.ackedAt, Confirmed: d.confirmedAt})
}

type tracker struct {
	autoCommit bool
	interval   time.Duration // between periodic commits, with autoCommit
	group      string
	conf       *sarama.Config
	logger     watermill.LoggerAdapter

	clientMu sync.Mutex
	client   sarama.Client // the Subscriber's own, for offset commits; set by Subscribe

	progress ProgressReader // SubscriberConfig.Progress
	rewinds  Rewinds

	mu         sync.Mutex
	deliveries map[offsetKey]*delivery
	claims     map[partitionKey]chan struct{}
	committers map[sarama.ConsumerGroupSession]*committer
}

func newTracker(autoCommit bool, interval time.Duration, group string, conf *sarama.Config, logger watermill.LoggerAdapter) *tracker {
	return &tracker{
		autoCommit: autoCommit,
		interval:   interval,
		group:      group,
		conf:       conf,
		logger:     logger,
		deliveries: make(map[offsetKey]*delivery),
		claims:     make(map[partitionKey]chan struct{}),
		committers: make(map[sarama.ConsumerGroupSession]*committer),
	}
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// add registers msg, received from watermill-kafka on topic.
func (t *tracker) add(topic string, msg *message.Message) *delivery {
	partition, ok1 := kafka.MessagePartitionFromCtx(msg.Context())
	offset, ok2 := kafka.MessagePartitionOffsetFromCtx(msg.Context())
	key, hasKey := kafka.MessageKeyFromCtx(msg.Context())
	d := &delivery{committed: make(chan struct{}), ack: &ackgap.Delivery{
		ConsumerGroup: t.group, Partition: partition, Offset: offset, HasOffset: ok1 && ok2,
		Key: string(key), HasKey: hasKey,
		Confirmation: ackgap.ConfirmationReported, Destination: topic, Received: time.Now(),
		// watermill-kafka hands a partition's records out one at a time,
		// each after the previous one was acked: the watermark is the
		// record's own offset. Filled only with SubscriberConfig.Progress,
		// so the inbox writes progress rows only when they are read.
		Watermark: offset, HasWatermark: ok1 && ok2 && t.progress != nil,
	}}
	msg.SetContext(ackgap.WithDelivery(msg.Context(), d.ack))
	if !ok1 || !ok2 {
		// Not from a consumer-group claim: nothing to wait for.
		d.claimDone = closedCh
		return d
	}
	d.key = offsetKey{partitionKey{topic, partition}, offset}
	t.mu.Lock()
	defer t.mu.Unlock()
	if done, ok := t.claims[d.key.partitionKey]; ok {
		d.claimDone = done
	} else {
		d.claimDone = closedCh
	}
	// A nacked message comes back as a copy with the same offset; the
	// newest delivery wins.
	t.deliveries[d.key] = d
	return d
}

func (t *tracker) forget(d *delivery) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deliveries[d.key] == d {
		delete(t.deliveries, d.key)
	}
}

func (t *tracker) take(k offsetKey) *delivery {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.deliveries[k]
	delete(t.deliveries, k)
	return d
}

func (t *tracker) claimStarted(k partitionKey) chan struct{} {
	done := make(chan struct{})
	t.mu.Lock()
	t.claims[k] = done
	t.mu.Unlock()
	return done
}

func (t *tracker) claimEnded(k partitionKey, done chan struct{}) {
	t.mu.Lock()
	if t.claims[k] == done {
		delete(t.claims, k)
	}
	t.mu.Unlock()
	close(done)
}

// tracer is the kafka.SaramaTracer that installs the tracker; it leaves
// everything else as it is.
type tracer struct{ t *tracker }

var _ kafka.SaramaTracer = tracer{}

func (tracer) WrapConsumer(c sarama.Consumer) sarama.Consumer { return c }

func (tracer) WrapPartitionConsumer(pc sarama.PartitionConsumer) sarama.PartitionConsumer {
	return pc
}

func (tr tracer) WrapConsumerGroupHandler(h sarama.ConsumerGroupHandler) sarama.ConsumerGroupHandler {
	return groupHandler{inner: h, t: tr.t}
}

func (tracer) WrapSyncProducer(_ *sarama.Config, p sarama.SyncProducer) sarama.SyncProducer {
	return p
}

type groupHandler struct {
	inner sarama.ConsumerGroupHandler
	t     *tracker
}

var _ sarama.ConsumerGroupHandler = groupHandler{}

// Setup starts the session's committer with interval commits. Sarama
// calls it before any ConsumeClaim of the session.
func (h groupHandler) Setup(s sarama.ConsumerGroupSession) error {
	if err := h.inner.Setup(s); err != nil {
		return err
	}
	h.t.clientMu.Lock()
	client := h.t.client
	h.t.clientMu.Unlock()
	rewind(s, client, h.t.conf, h.t.group, h.t.progress, &h.t.rewinds, h.t.logger)
	if h.t.autoCommit {
		h.t.startCommitter(s)
	}
	return nil
}

// Cleanup commits what the session marked and settles it. Sarama calls it
// after every ConsumeClaim of the session returned and before it closes
// the session's offset manager.
func (h groupHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	err := h.inner.Cleanup(s)
	h.t.stopCommitter(s)
	return err
}

func (h groupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	k := partitionKey{claim.Topic(), claim.Partition()}
	done := h.t.claimStarted(k)
	defer h.t.claimEnded(k, done)
	return h.inner.ConsumeClaim(&session{ConsumerGroupSession: s, t: h.t, c: h.t.committerOf(s)}, claim)
}

// session is one claim's view of the group session; watermill-kafka calls
// MarkMessage and Commit on the claim's goroutine only.
type session struct {
	sarama.ConsumerGroupSession
	t       *tracker
	c       *committer // with interval commits
	pending []*delivery
}

var _ sarama.ConsumerGroupSession = (*session)(nil)

func (s *session) MarkMessage(m *sarama.ConsumerMessage, metadata string) {
	s.ConsumerGroupSession.MarkMessage(m, metadata)
	d := s.t.take(offsetKey{partitionKey{m.Topic, m.Partition}, m.Offset})
	if d == nil {
		return
	}
	d.ackedAt = time.Now()
	if s.t.autoCommit {
		// The session's committer commits it within CommitInterval, or
		// when the session ends, and then settles it.
		if s.c != nil {
			s.c.add(d)
		} else {
			d.ack.Settle(ackgap.Settlement{Acked: true, At: d.ackedAt, Err: errNoSession})
		}
		close(d.committed)
		return
	}
	s.pending = append(s.pending, d)
}

// Commit commits the offsets marked since the last Commit and waits for
// the coordinator's answer (tracker.commit); Sarama's own Commit is not
// called, as it reports a refusal only on the group's error channel. A
// refused message is settled unconfirmed; it is redelivered unless a later
// commit covers it, and the inbox skips it.
func (s *session) Commit() {
	errs := s.t.commit(s.ConsumerGroupSession, s.pending)
	at := time.Now()
	for i, d := range s.pending {
		d.confirmedAt, d.commitErr = at, errs[i]
		close(d.committed)
	}
	s.pending = s.pending[:0]
}

// setClient gives the tracker the Kafka client it commits with.
func (t *tracker) setClient(c sarama.Client) {
	t.clientMu.Lock()
	t.client = c
	t.clientMu.Unlock()
}

// commit sends one OffsetCommit request for ds (per partition, the
// highest offset + 1) with s's generation and member id, and returns each
// delivery's error: nil when the coordinator accepted the commit covering
// it, else an error wrapping ackgap.ErrAckNotConfirmed and
// ErrCommitRefused (logged with the partition and offset).
func (t *tracker) commit(s sarama.ConsumerGroupSession, ds []*delivery) []error {
	errs := make([]error, len(ds))
	if len(ds) == 0 {
		return errs
	}
	index := make(map[partitionKey]int)
	var blocks []commitBlock
	for _, d := range ds {
		i, ok := index[d.key.partitionKey]
		if !ok {
			i = len(blocks)
			index[d.key.partitionKey] = i
			blocks = append(blocks, commitBlock{k: d.key.partitionKey, offset: -1})
		}
		blocks[i].offset = max(blocks[i].offset, d.key.offset+1)
	}
	t.clientMu.Lock()
	client := t.client
	t.clientMu.Unlock()
	var blockErrs []error
	if client == nil {
		blockErrs = make([]error, len(blocks))
		for i := range blockErrs {
			blockErrs[i] = errNoClient
		}
	} else {
		blockErrs = sendOffsetCommit(client, t.conf, t.group, s.GenerationID(), s.MemberID(), blocks)
	}
	for i, b := range blocks {
		if blockErrs[i] == nil {
			continue
		}
		// A warning: the inbox skips what a redelivery brings.
		warn(t.logger, "Offset commit refused: the acked messages below it are unconfirmed and will be redelivered unless a later commit covers them",
			blockErrs[i], watermill.LogFields{"topic": b.k.topic, "partition": b.k.partition, "offset": b.offset,
				"consumer_group": t.group, "generation": s.GenerationID()})
		blockErrs[i] = fmt.Errorf("%w: %w: topic %s partition %d offset %d: %w", ackgap.ErrAckNotConfirmed, ErrCommitRefused, b.k.topic, b.k.partition, b.offset, blockErrs[i])
	}
	for j, d := range ds {
		errs[j] = blockErrs[index[d.key.partitionKey]]
	}
	return errs
}

// committer makes the periodic commits of one group session with interval
// commits, so that the time each offset reached Kafka is known: every
// interval it commits what was marked (tracker.commit, which reads the
// coordinator's answer per partition) and settles those deliveries.
// NewSubscriber moves Sarama's own auto-commit ticker out of the way
// (saramaTickerIdle); Sarama still commits what is marked when the
// session closes, after Cleanup's last commit.
type committer struct {
	t        *tracker
	sess     sarama.ConsumerGroupSession
	interval time.Duration

	mu      sync.Mutex
	pending []*delivery

	stop chan struct{}
	done chan struct{}
}

// saramaTickerIdle is the Sarama AutoCommit.Interval NewSubscriber sets
// with interval commits: the committer does the periodic commits.
const saramaTickerIdle = 24 * time.Hour

func (t *tracker) startCommitter(s sarama.ConsumerGroupSession) {
	c := &committer{t: t, sess: s, interval: t.interval, stop: make(chan struct{}), done: make(chan struct{})}
	t.mu.Lock()
	t.committers[s] = c
	t.mu.Unlock()
	go c.run()
}

func (t *tracker) committerOf(s sarama.ConsumerGroupSession) *committer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.committers[s]
}

func (t *tracker) stopCommitter(s sarama.ConsumerGroupSession) {
	t.mu.Lock()
	c := t.committers[s]
	delete(t.committers, s)
	t.mu.Unlock()
	if c != nil {
		close(c.stop)
		<-c.done
	}
}

func (c *committer) add(d *delivery) {
	c.mu.Lock()
	c.pending = append(c.pending, d)
	c.mu.Unlock()
}

func (c *committer) run() {
	defer close(c.done)
	ticker := time.NewTicker(c.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			c.flush()
		case <-c.stop:
			c.flush()
			return
		}
	}
}

// flush commits the marked offsets and settles the deliveries marked
// before it started: confirmed when the coordinator accepted the commit,
// unconfirmed otherwise.
func (c *committer) flush() {
	c.mu.Lock()
	batch := c.pending
	c.pending = nil
	c.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	errs := c.t.commit(c.sess, batch)
	at := time.Now()
	for i, d := range batch {
		if errs[i] != nil {
			d.ack.Settle(ackgap.Settlement{Acked: true, At: d.ackedAt, Err: errs[i]})
			continue
		}
		d.ack.Settle(ackgap.Settlement{Acked: true, At: d.ackedAt, Confirmed: at})
	}
}
