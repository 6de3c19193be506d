package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/ackgap/ackgap"
)

var (
	_ message.Subscriber          = (*ParallelSubscriber)(nil)
	_ sarama.ConsumerGroupHandler = (*parallelSub)(nil)
)

// ParallelSubscriber is a consumer-group Watermill subscriber that hands
// out up to MaxInFlight records of one partition at once (same record key
// strictly in order with [OrderingKey]) and commits offsets itself, in
// batches, only up to each partition's watermark: the lowest offset not
// yet acked. It is the opt-in fast path of issue #11; the default
// [Subscriber] is this engine with OrderingPartition and MaxInFlight 1.
//
// Commits. ParallelSubscriber turns Sarama's offset manager off and sends
// each OffsetCommit request to the group coordinator itself, with the
// group session's generation and member id, one request for every
// partition of the member whose watermark moved (on every move, coalesced
// while a request is on the wire, or every CommitInterval). A message's
// ackgap.Delivery is settled confirmed only when a commit covering its
// offset was accepted; a refused, fenced or unanswered commit settles the
// messages it covered with an error wrapping ackgap.ErrAckNotConfirmed and
// [ErrCommitRefused], logs the partition and offset, and is retried with
// the partition's current watermark. A nacked or failing message holds its
// partition's watermark, so a crash redelivers everything from it on, and
// the inbox skips what was already applied. Each OffsetCommit request
// (and each OffsetFetch below) is bounded by CommitTimeout, the lookup of
// the group coordinator included, not by Sarama's Net.ReadTimeout and
// retries: one given up on counts as unanswered, and no other is sent
// until Sarama returned from it.
//
// Regressions. Commits go out one at a time and a partition's offset only
// grows, so the member never moves a committed offset backwards itself.
// But a commit left unanswered (CommitTimeout, a lost connection) may
// still be applied by the coordinator late, after a newer one, and lower
// the group's committed offset below the watermark already reported. So
// after an unanswered commit the subscriber fetches the group's committed
// offsets of the partitions concerned (OffsetFetch to the coordinator) at
// the next commit round, or after the retry delay when no commit is due,
// and then every second, for SessionTimeout after the partition's last
// unanswered commit, for as long as the member owns the partition in its
// generation (a late commit from an older generation is refused by the
// coordinator). A committed offset found below the highest one the
// coordinator accepted from the member is reported ([ErrOffsetRegressed],
// a warn log with the partition and offsets, [PartitionStats].Regressions)
// and repaired by committing the watermark again, without waiting for a
// new message or a rebalance. A commit landing later than the watch is
// overwritten by the partition's next commit, or found when the partition
// is claimed again: a partition claimed with a committed offset below one
// the coordinator accepted from this subscriber before is reported the
// same way, and its watermark is committed again as the records in between
// are redelivered and acked.
//
// Finished offsets. The committed offset is the lowest offset not yet
// acked, so the records acked above it would be fetched again after a
// stop, and skipped by the inbox. As in the Confluent Parallel Consumer,
// each commit carries them in the partition's OffsetCommit metadata
// ("ackgap1:" then a run-length or bitset encoding of the offsets above
// the committed one, whichever is shorter, base64, with a CRC-32C; at most
// 4 KiB, Kafka's default offset.metadata.max.bytes: a longer set is not
// sent, and a coordinator that refuses one as too large gets none from
// then on). A partition whose watermark is held while records finish above
// it is committed again within 100 ms (at the next tick with a
// CommitInterval) with the grown set. When a partition is claimed at a
// committed offset whose metadata is such a set for that very offset (read
// with one OffsetFetch per session, within CommitTimeout), the records it
// names are settled as acked for the watermark as they are read, never
// handed out, and counted in [PartitionStats].ReplaysSkipped; they stay in
// the set the next commits carry. Other metadata (another client's,
// another version, a damaged or stale set, an offset reset) is ignored.
// With SubscriberConfig.Progress set nothing is skipped: a database behind
// the group's committed offset (a failover, a restore) may have lost what
// the set says was finished. The set is an optimisation, never a
// correctness dependency: without it the records are handed out again
// and the inbox skips them. So a graceful stop replays nothing but what it
// cancelled, and a crash replays what was acked after the last commit.
//
// Memory. Each partition buffers at most MaxBufferedRecords records and
// MaxBufferedBytes bytes (plus one record) that are not yet below its
// watermark; at the limit it stops reading its claim, and Sarama stops
// fetching the partition until there is room. Nothing is dropped.
//
// Rebalance and Close. When a partition is revoked (the group session
// ends), the partition stops handing out records, waits up to
// HoldTimeout for those in flight, commits its watermark (within
// CommitTimeout) and releases the partition, within HoldTimeout +
// CommitTimeout (at most RebalanceTimeout); records it read but had not
// handed out are left to the next owner. Close (or the end of Subscribe's
// ctx) stops handing out records, waits up to CloseTimeout for those in
// flight, cancels the rest (the inbox rolls them back; they are
// redelivered), commits every watermark and leaves the group, waiting up
// to LeaveTimeout for the commits and the leave: it returns, and the
// channel closes, within CloseTimeout + LeaveTimeout even when the broker
// or the coordinator lookup stopped answering. A stop that gave up logs
// what it did not commit ([LogStopGaveUp]) and Close returns an error
// wrapping [ErrCloseTimedOut]; the group's next member replays it.
//
// It is safe for concurrent use; Close may be called more than once.
type ParallelSubscriber struct {
	cfg      ParallelConfig
	sc       *sarama.Config
	commitSC *sarama.Config // sc with CommitTimeout as Net.ReadTimeout
	logger   watermill.LoggerAdapter
	accepted acceptedOffsets
	rewinds  Rewinds

	mu     sync.Mutex
	closed bool
	subs   []*parallelSub

	closeOnce sync.Once
	closeErr  error
	// metrics is the registration of the instruments' callback,
	// unregistered by Close.
	metrics metric.Registration
	// sentHook is every subscription's (tests only; see parallelSub).
	sentHook func(*parallelSub)
}

// Rewinds counts the partitions this subscriber started below the group's
// committed offset because the database was behind (SubscriberConfig.Progress).
func (s *ParallelSubscriber) Rewinds() *Rewinds { return &s.rewinds }

// NewParallelSubscriber returns a [ParallelSubscriber] with the settings
// of cfg (see [ParallelConfig] and [ParallelConfig.SaramaConfig]). It
// connects to Kafka only when Subscribe is called. logger may be nil (no
// logs). It returns an error wrapping "invalid config" naming every bad
// field at once.
func NewParallelSubscriber(cfg *ParallelConfig, logger watermill.LoggerAdapter) (*ParallelSubscriber, error) {
	if cfg == nil {
		return nil, errors.New("invalid config: ParallelConfig is nil: Brokers and ConsumerGroup are required")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	base := c.saramaBase()
	sc := base.SaramaConfig()
	if err := base.checkSarama(sc); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	s := &ParallelSubscriber{cfg: c, sc: sc, commitSC: c.commitSarama(sc), logger: logger}
	mp := c.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	reg, err := registerMetrics(s, mp)
	if err != nil {
		return nil, err
	}
	s.metrics = reg
	return s, nil
}

// Subscribe joins the consumer group for topic with a Kafka client of its
// own and returns the topic's messages. The channel is closed once the
// subscription stopped: after Close, or after ctx ended (see
// [ParallelSubscriber]). It returns [ErrSubscriberClosed] after Close, and
// an error when the brokers cannot be reached.
func (s *ParallelSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	sub, err := s.subscribe(ctx, topic, 0)
	if err != nil {
		return nil, err
	}
	return sub.out, nil
}

// subscribeRuns is Subscribe for [BatchConsumer]: it hands out runs, up to
// keyRun messages of one record key at once in offset order under
// OrderingKey (one message otherwise). The run's messages are in flight
// together and the key's next message is handed out only after all of
// them were settled; the receiver must ack a prefix of the run and nack
// the rest (a nack holds the key: the first message not acked is handed
// out again, with the rest of its key, after NackResendSleep).
func (s *ParallelSubscriber) subscribeRuns(ctx context.Context, topic string, keyRun int) (<-chan []*message.Message, error) {
	sub, err := s.subscribe(ctx, topic, max(keyRun, 1))
	if err != nil {
		return nil, err
	}
	return sub.runs, nil
}

// subscribe starts a subscription handing out single messages on out
// (keyRun 0) or runs on runs (keyRun >= 1).
func (s *ParallelSubscriber) subscribe(ctx context.Context, topic string, keyRun int) (*parallelSub, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, ErrSubscriberClosed
	}
	// Connect without holding s.mu: Close and Stats do not wait for it.
	client, err := sarama.NewClient(s.cfg.Brokers, s.sc)
	if err != nil {
		return nil, fmt.Errorf("kafkabroker: subscribe to %q: %w", topic, err)
	}
	group, err := sarama.NewConsumerGroupFromClient(s.cfg.ConsumerGroup, client)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("kafkabroker: subscribe to %q: %w", topic, err)
	}
	// Offset commits go on connections of their own: on the consumer's,
	// each would wait behind the fetch in flight (up to FetchMaxWait),
	// as Kafka answers a connection's requests in order; and they time
	// out after CommitTimeout, not the fetches' Net.ReadTimeout.
	commits, err := sarama.NewClient(s.cfg.Brokers, s.commitSC)
	if err != nil {
		_ = group.Close()
		_ = client.Close()
		return nil, fmt.Errorf("kafkabroker: subscribe to %q: %w", topic, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = group.Close()
		_ = client.Close()
		_ = commits.Close()
		return nil, ErrSubscriberClosed
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	// Message contexts outlive ctx until the drain is over.
	msgCtx, cancelMsgs := context.WithCancel(context.WithoutCancel(ctx))
	sub := &parallelSub{
		rewinds:    &s.rewinds,
		cfg:        s.cfg,
		sc:         s.sc,
		topic:      topic,
		logger:     s.logger.With(watermill.LogFields{"topic": topic, "consumer_group": s.cfg.ConsumerGroup}),
		client:     client,
		commits:    commits,
		group:      group,
		out:        make(chan *message.Message),
		keyRun:     keyRun,
		msgCtx:     msgCtx,
		cancelMsgs: cancelMsgs,
		cancelRun:  cancelRun,
		stopCh:     make(chan struct{}),
		hardStop:   make(chan struct{}),
		settledCh:  make(chan struct{}, 1),
		consumed:   make(chan struct{}),
		done:       make(chan struct{}),
		loops:      make(map[partitionKey]*partLoop),
		accepted:   &s.accepted,
		sentHook:   s.sentHook,
	}
	if keyRun > 0 {
		sub.runs = make(chan []*message.Message)
	}
	s.subs = append(s.subs, sub)
	go sub.consume(runCtx)
	go func() {
		for err := range group.Errors() {
			sub.logger.Error("Consumer group error", err, nil)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			sub.stop()
		case <-sub.done:
		}
	}()
	return sub, nil
}

// Close stops every subscription: no new message is handed out, messages
// in flight get up to CloseTimeout to be acked (or nacked), every
// partition's watermark is committed, then the consumer leaves the group
// and the channels close. It returns once everything stopped, or after
// CloseTimeout + LeaveTimeout with an error wrapping [ErrCloseTimedOut]
// when the last commits and the leave did not finish (the broker or the
// coordinator lookup stopped answering; [LogStopGaveUp] says what was not
// committed). Later calls return the first call's result.
func (s *ParallelSubscriber) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		subs := slices.Clone(s.subs)
		s.mu.Unlock()
		errs := make([]error, len(subs))
		var wg sync.WaitGroup
		for i, sub := range subs {
			wg.Go(func() { errs[i] = sub.stop() })
		}
		wg.Wait()
		if s.metrics != nil {
			// The callback reads nothing after Close; an error here
			// (a provider shut down first) changes nothing for the stop.
			_ = s.metrics.Unregister()
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("kafkabroker: close: %w", err)
		}
	})
	return s.closeErr
}

// PartitionStats is a snapshot of one claimed partition of a
// [ParallelSubscriber].
type PartitionStats struct {
	Topic     string
	Partition int32
	// Buffered is how many records were read and are not yet below the
	// watermark (in flight, waiting behind their key, or acked above a
	// gap); BufferedBytes their key and value bytes. Buffered never
	// exceeds MaxBufferedRecords.
	Buffered      int
	BufferedBytes int64
	// PeakBuffered is the highest Buffered since the partition was
	// claimed.
	PeakBuffered int
	// InFlight is how many records are handed out and not yet acked or
	// nacked.
	InFlight int
	// Watermark is the lowest offset not yet acked, the offset the member
	// commits; -1 before the first record.
	Watermark int64
	// Committed is the highest offset the group coordinator accepted from
	// this subscriber for the partition; -1 when none yet. Watermark -
	// Committed is what a crash now would redeliver of the acked records.
	Committed int64
	// HighWaterMark is the partition's high watermark, an offset: the
	// one the next record written gets, as of the last fetch answered
	// (Sarama's ConsumerGroupClaim.HighWaterMarkOffset); 0 before the
	// first.
	HighWaterMark int64
	// Lag, in records, is HighWaterMark minus the group's committed
	// offset (Committed, or before this subscriber's first accepted
	// commit the offset the claim started at), what
	// kafka-consumer-groups.sh calls lag: the records a restart now would
	// read, the acked ones above the committed offset included. -1 when
	// unknown (the group has no committed offset, or no fetch was
	// answered yet).
	Lag int64
	// Regressions is how many times the subscriber found the group's
	// committed offset of the partition below Committed
	// ([ErrOffsetRegressed]), over its lifetime: by the offset checks after
	// an unanswered commit, or when the partition was claimed.
	Regressions int64
	// ReplaysSkipped is how many records of the partition the subscriber
	// skipped, over its lifetime, without handing them out, because the
	// committed offset's metadata recorded them finished above it by the
	// partition's last owner (see "Finished offsets" at
	// [ParallelSubscriber]): each one a replay that no handler and no
	// inbox saw.
	ReplaysSkipped int64
}

// Stats returns a snapshot of every partition the subscriber holds now,
// ordered by topic and partition. Safe for concurrent use.
func (s *ParallelSubscriber) Stats() []PartitionStats {
	s.mu.Lock()
	subs := slices.Clone(s.subs)
	s.mu.Unlock()
	var out []PartitionStats
	for _, sub := range subs {
		sub.mu.Lock()
		loops := slices.Collect(maps.Values(sub.loops))
		sub.mu.Unlock()
		for _, l := range loops {
			l.statsMu.Lock()
			st := l.stats
			l.statsMu.Unlock()
			st.Committed = -1
			if c, ok := sub.accepted.get(l.k); ok {
				st.Committed = c
			}
			st.HighWaterMark = l.claim.HighWaterMarkOffset()
			st.Lag = lagOf(st.HighWaterMark, st.Committed, l.claim.InitialOffset())
			st.Regressions = sub.accepted.regressionsOf(l.k)
			st.ReplaysSkipped = sub.accepted.skipsOf(l.k)
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b PartitionStats) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// lagOf returns hwm minus the group's committed offset: committed, or
// initial (the offset the claim started at) before the subscriber's first
// accepted commit; -1 when neither is an offset or no fetch was answered
// yet (hwm below it).
func lagOf(hwm, committed, initial int64) int64 {
	base := committed
	if base < 0 {
		base = initial
	}
	if base < 0 || hwm < base {
		return -1
	}
	return hwm - base
}

// parallelSub is one Subscribe call: a consumer group of its own and the
// channel its partitions hand messages out on.
type parallelSub struct {
	cfg    ParallelConfig
	sc     *sarama.Config
	topic  string
	logger watermill.LoggerAdapter
	client sarama.Client
	// commits is the client offset commits are sent with.
	commits sarama.Client
	group   sarama.ConsumerGroup
	out     chan *message.Message
	// runs, when set (subscribeRuns), replaces out: runs of up to keyRun
	// messages of one key.
	runs   chan []*message.Message
	keyRun int

	msgCtx     context.Context
	cancelMsgs context.CancelFunc
	cancelRun  context.CancelFunc

	stopCh    chan struct{} // closed when stopping starts: hand out nothing more
	hardStop  chan struct{} // closed when waiting for in-flight messages is over
	inflight  atomic.Int64  // messages handed out and not yet settled
	rewinds   *Rewinds      // the subscriber's
	settledCh chan struct{} // kicked when inflight drops
	consumed  chan struct{} // closed when the consume loop returned
	done      chan struct{} // closed when stop finished
	stopOnce  sync.Once
	stopErr   error

	mu       sync.Mutex
	com      *offsetCommitter // the current group session's
	loops    map[partitionKey]*partLoop
	ended    map[partitionKey]int64 // watermark of each partition whose loop ended
	accepted *acceptedOffsets       // the subscriber's, shared by its subscriptions
	// inherit is the current session's committed offsets and metadata of
	// its claims, read in Setup (none with Progress set).
	inherit map[partitionKey]committedAt

	// handout guards the sends on out and runs: a partition loop holds it
	// for reading while it may send and until it counted what it sent in
	// inflight (its select then also waits on stopCh, so it lets go soon
	// after stop begins); stop and closeHandout hold it for writing to set
	// handoutStopped, after which nothing is sent.
	handout        sync.RWMutex
	handoutStopped bool
	handoutOnce    sync.Once
	// sentHook, when set (tests only), runs in a partition loop right
	// after a receiver took a message from out, before it is counted.
	sentHook func(*parallelSub)
}

// stopHandout makes sure no partition loop sends on out or runs from now
// on, and that every message a receiver took before is counted in
// inflight: a loop counts a message it sent before it lets go of the read
// lock, which this takes for writing.
func (sub *parallelSub) stopHandout() {
	sub.handout.Lock()
	defer sub.handout.Unlock()
	sub.handoutStopped = true
}

// closeHandout closes out (and runs) once no partition loop can send on
// them any more; it is called when the consume loop returns, or by stop
// when it gave up waiting for it.
func (sub *parallelSub) closeHandout() {
	sub.handoutOnce.Do(func() {
		sub.handout.Lock()
		defer sub.handout.Unlock()
		sub.handoutStopped = true
		close(sub.out)
		if sub.runs != nil {
			close(sub.runs)
		}
	})
}

// consume runs group sessions until runCtx ends.
func (sub *parallelSub) consume(runCtx context.Context) {
	defer close(sub.consumed)
	defer sub.closeHandout()
	for runCtx.Err() == nil {
		err := sub.group.Consume(runCtx, []string{sub.topic}, sub)
		switch {
		case err == nil:
		case errors.Is(err, sarama.ErrClosedConsumerGroup):
			return
		default:
			sub.logger.Error("Consumer group session failed; rejoining", err, nil)
			select {
			case <-runCtx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// Setup starts the session's committer.
func (sub *parallelSub) Setup(sess sarama.ConsumerGroupSession) error {
	rewind(sess, sub.commits, sub.sc, sub.cfg.ConsumerGroup, sub.cfg.Progress, sub.rewinds, sub.logger)
	com := newOffsetCommitter(sub.commits, sub.sc, sub.cfg.ConsumerGroup, sess.GenerationID(), sess.MemberID(), sub.cfg.CommitInterval,
		sub.logger.With(watermill.LogFields{"member_id": sess.MemberID()}))
	com.accepted = sub.accepted
	com.checkWindow = sub.cfg.SessionTimeout
	com.timeout = sub.cfg.CommitTimeout
	inherit := sub.readInherited(sess, com)
	go com.run()
	sub.mu.Lock()
	sub.com = com
	sub.inherit = inherit
	sub.mu.Unlock()
	return nil
}

// readInherited reads the committed offsets of sess's claims with their
// metadata (one OffsetFetch, within CommitTimeout), where the partitions'
// last owners recorded the offsets they finished above them. With
// Progress set it reads nothing: a database behind the group's committed
// offset (a failover, a restore) may have lost what the metadata says was
// finished, so every record from the committed offset on is handed out
// again and the inbox decides. A failed read only means the records are
// handed out again.
func (sub *parallelSub) readInherited(sess sarama.ConsumerGroupSession, com *offsetCommitter) map[partitionKey]committedAt {
	if sub.cfg.Progress != nil {
		return nil
	}
	var keys []partitionKey
	for topic, partitions := range sess.Claims() {
		for _, p := range partitions {
			keys = append(keys, partitionKey{topic, p})
		}
	}
	if len(keys) == 0 {
		return nil
	}
	var got map[partitionKey]committedAt
	ran, err := com.bounded("OffsetFetch", func() error {
		var ferr error
		got, ferr = fetchCommittedMeta(sub.commits, sub.sc, sub.cfg.ConsumerGroup, keys)
		return ferr
	})
	if err != nil {
		sub.logger.Info("Cannot read the finished offsets the partitions' last owners committed; their records are handed out again and the inbox skips them",
			watermill.LogFields{"err": err.Error(), "generation": sess.GenerationID()})
	}
	if !ran {
		return nil
	}
	return got
}

// inherited returns the finished offsets above k's committed offset that
// its last owner recorded in the commit's metadata, when the claim starts
// at that committed offset (not at a reset, a rewind or an offset the
// session did not read).
func (sub *parallelSub) inherited(k partitionKey, initial int64) []offsetRun {
	sub.mu.Lock()
	c, ok := sub.inherit[k]
	sub.mu.Unlock()
	if !ok || c.offset != initial {
		return nil
	}
	runs, _ := decodeFinished(c.metadata, c.offset)
	return runs
}

// Cleanup commits the session's last watermarks; Sarama calls it after
// every ConsumeClaim of the session returned.
func (sub *parallelSub) Cleanup(sarama.ConsumerGroupSession) error {
	sub.mu.Lock()
	com := sub.com
	sub.com = nil
	sub.mu.Unlock()
	if com != nil {
		com.close()
	}
	return nil
}

// ConsumeClaim runs one partition until it is revoked or the subscription
// stops.
func (sub *parallelSub) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	k := partitionKey{claim.Topic(), claim.Partition()}
	if last, ok := sub.accepted.get(k); ok && claim.InitialOffset() < last {
		// The records in between are delivered again and skipped by the
		// inbox; the watermark is committed again as they are acked.
		sub.accepted.regressed(k)
		warn(sub.logger, "The group's committed offset went backwards since this subscriber's last accepted commit (a zombie member's late commit, or offsets expired or reset): records from it on are redelivered",
			ErrOffsetRegressed, watermill.LogFields{"partition": k.partition, "committed": claim.InitialOffset(), "accepted_before": last, "generation": sess.GenerationID()})
	}
	runs := sub.inherited(k, claim.InitialOffset())
	sub.mu.Lock()
	l := &partLoop{
		sub: sub, sess: sess, claim: claim, k: k, com: sub.com,
		fin:    newFinishedSet(runs),
		skip:   skipCursor{runs: runs},
		wm:     newWatermark(),
		queues: make(map[string][]*pending),
		events: make(chan partEvent),
		done:   make(chan struct{}),
		stats:  PartitionStats{Topic: k.topic, Partition: k.partition, Watermark: -1},
	}
	sub.loops[k] = l
	sub.mu.Unlock()
	if l.com != nil {
		l.com.track(k, l.fin)
	}
	defer func() {
		l.statsMu.Lock()
		wm := l.stats.Watermark
		l.statsMu.Unlock()
		sub.mu.Lock()
		if sub.loops[k] == l {
			delete(sub.loops, k)
		}
		if sub.ended == nil {
			sub.ended = make(map[partitionKey]int64)
		}
		sub.ended[k] = wm
		sub.mu.Unlock()
	}()
	l.run()
	return nil
}

// stop drains the subscription and closes its consumer; concurrent and
// later calls wait for the first.
func (sub *parallelSub) stop() error {
	sub.stopOnce.Do(func() {
		defer close(sub.done)
		close(sub.stopCh)
		// A message a receiver took just now may not be counted in
		// inflight yet (its loop counts it after the send). Waiting for
		// inflight without this barrier could end at once, and its ack,
		// however soon it came, would never reach the watermark: the
		// last commit would leave it to the group's next member.
		sub.stopHandout()
		timer := time.NewTimer(sub.cfg.CloseTimeout)
		for sub.inflight.Load() > 0 {
			select {
			case <-sub.settledCh:
				continue
			case <-timer.C:
				sub.logger.Info("In-flight messages not settled within CloseTimeout; cancelling them (they will be redelivered)",
					watermill.LogFields{"close_timeout": sub.cfg.CloseTimeout.String(), "in_flight": sub.inflight.Load()})
			}
			break
		}
		timer.Stop()
		close(sub.hardStop)
		sub.cancelMsgs()
		sub.cancelRun()
		// The last commits and the group leave, within LeaveTimeout: a
		// broker or coordinator lookup that stopped answering would hold
		// them for as long as Sarama retries.
		finished := make(chan error, 1)
		go func() {
			<-sub.consumed
			finished <- errors.Join(sub.group.Close(), sub.client.Close(), sub.commits.Close())
		}()
		leave := time.NewTimer(sub.cfg.LeaveTimeout)
		defer leave.Stop()
		select {
		case sub.stopErr = <-finished:
			return
		case <-leave.C:
		}
		sub.giveUp()
	})
	<-sub.done
	return sub.stopErr
}

// LogStopGaveUp is logged at error when a stop (Close, or the end of
// Subscribe's or Run's ctx) gave up after LeaveTimeout waiting for the
// consumer's last offset commits and the group leave (a broker or group
// coordinator that stopped answering), with the error field wrapping
// [ErrCloseTimedOut]. What it did not commit is redelivered to the
// group's next member, whose inbox skips what was applied.
//
// [Subscriber], [ParallelSubscriber] and [BatchConsumer] log it once per
// partition whose acked records are not all confirmed committed, or, when
// every acked record was committed and only the group leave did not
// finish, once with partition -1 and committed and watermark -1 (nothing
// to replay). Fields: partition,
// committed (the highest offset the coordinator accepted from this
// subscriber: the replay starts there, or lower; -1: none), watermark (the
// lowest offset not acked: the records from committed up to it were acked
// but their commit is not confirmed), leave_timeout. ([Subscriber] logged
// it once per subscription, with fields unconfirmed and unacked, until it
// ran on this engine.)
const LogStopGaveUp = "Stop gave up waiting for the broker: offsets not committed; the group's next member replays them"

// giveUp ends a stop whose last commits or group leave did not finish
// within LeaveTimeout: it logs what was not committed (LogStopGaveUp),
// closes the Kafka clients so that Sarama's calls in flight fail instead
// of waiting on the broker, closes the channels, and sets stopErr to an
// error wrapping ErrCloseTimedOut.
func (sub *parallelSub) giveUp() {
	sub.mu.Lock()
	wms := maps.Clone(sub.ended)
	if wms == nil {
		wms = make(map[partitionKey]int64)
	}
	for k, l := range sub.loops {
		l.statsMu.Lock()
		wms[k] = l.stats.Watermark
		l.statsMu.Unlock()
	}
	sub.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(wms), func(a, b partitionKey) int { return int(a.partition - b.partition) })
	logged := false
	for _, k := range keys {
		committed, ok := sub.accepted.get(k)
		if !ok {
			committed = -1
		}
		if wm := wms[k]; wm >= 0 && committed >= wm {
			continue // everything acked is committed: nothing to say
		}
		sub.logger.Error(LogStopGaveUp, ErrCloseTimedOut, watermill.LogFields{
			"partition": k.partition, "committed": committed, "watermark": wms[k],
			"leave_timeout": sub.cfg.LeaveTimeout.String()})
		logged = true
	}
	if !logged {
		// Every acked record is committed; the leave did not finish. A stop
		// that gave up still says so, once.
		sub.logger.Error(LogStopGaveUp, ErrCloseTimedOut, watermill.LogFields{
			"partition": -1, "committed": -1, "watermark": -1,
			"leave_timeout": sub.cfg.LeaveTimeout.String()})
	}
	// Sarama's calls in flight fail once their connections are closed;
	// the consume loop and the leave then end in the background.
	_ = sub.commits.Close()
	_ = sub.client.Close()
	sub.closeHandout()
	sub.stopErr = fmt.Errorf("%w: the last offset commits and the group leave of group %q did not finish within LeaveTimeout (%s); "+
		"offsets not committed are redelivered to the group's next member", ErrCloseTimedOut, sub.cfg.ConsumerGroup, sub.cfg.LeaveTimeout)
}

func (sub *parallelSub) settledOne() {
	sub.inflight.Add(-1)
	select {
	case sub.settledCh <- struct{}{}:
	default:
	}
}

// pending is one record read from a partition and not yet acked.
type pending struct {
	rec  *sarama.ConsumerMessage
	key  string
	size int64
	msg  *message.Message // the copy to hand out next; nil until due
	d    *ackgap.Delivery
	// cancel ends msg's context; the watcher calls it once msg is settled,
	// as watermill-kafka does after an ack or nack.
	cancel context.CancelFunc
	// run is the run of its key p was handed out in (subscribeRuns, two
	// messages or more), until p is settled; acked is set when p was acked
	// in it.
	run   *keyRun
	acked bool
}

// keyRun is one handout of several messages of one key: the key's next
// messages wait until every one of them was settled.
type keyRun struct {
	size, left int
	nacked     bool
}

type eventKind int

const (
	evAcked  eventKind = iota // the handed-out copy was acked
	evNacked                  // the handed-out copy was nacked
	evResend                  // a nacked record's NackResendSleep is over
)

type partEvent struct {
	kind eventKind
	p    *pending
	d    *ackgap.Delivery
	at   time.Time
}

// partLoop is one claimed partition: it reads the claim while there is
// room, hands records out as their key allows, and moves the watermark as
// acks arrive. One goroutine (run) owns everything but stats.
type partLoop struct {
	sub   *parallelSub
	sess  sarama.ConsumerGroupSession
	claim sarama.ConsumerGroupClaim
	k     partitionKey
	com   *offsetCommitter

	// fin is the offsets acked above the watermark, which the commits
	// carry; skip, the ones the partition's last owner finished, which are
	// not handed out again.
	fin  *finishedSet
	skip skipCursor

	wm       *watermark
	queues   map[string][]*pending // per key: head in flight (or due), the rest waiting
	ready    []*pending            // due to be handed out
	inflight int
	draining bool
	runBuf   []*message.Message // the run due to be handed out, rebuilt until it is

	events chan partEvent
	done   chan struct{} // closed when run returned

	statsMu sync.Mutex
	stats   PartitionStats
}

// room reports whether the partition may read one more record.
func (l *partLoop) room() bool {
	n := l.wm.len()
	return n < l.sub.cfg.MaxBufferedRecords && (n == 0 || l.wm.bytes < l.sub.cfg.MaxBufferedBytes)
}

func (l *partLoop) run() {
	defer close(l.done)
	records := l.claim.Messages()
	stopCh := l.sub.stopCh
	stopping := false
	for !(stopping && l.inflight == 0) {
		var in <-chan *sarama.ConsumerMessage
		if !stopping && l.room() {
			in = records
		}
		var out chan<- *message.Message
		var next *message.Message
		var runs chan<- []*message.Message
		var run []*message.Message
		if !stopping && l.inflight < l.sub.cfg.MaxInFlight {
			if l.sub.runs != nil {
				if run = l.dueRun(); run != nil {
					runs = l.sub.runs
				}
			} else if next = l.due(); next != nil {
				out = l.sub.out
			}
		}
		sending := out != nil || runs != nil
		if sending {
			// Held while the select may send and until what it sent is
			// counted; it also waits on stopCh (not stopping), so
			// stopHandout gets it soon after stop begins.
			l.sub.handout.RLock()
			if l.sub.handoutStopped {
				out, runs = nil, nil
			}
		}
		ended := false // the claim ended: revoked
		select {
		case rec, ok := <-in:
			if !ok {
				ended = true
				break
			}
			l.read(rec)
		case out <- next:
			if l.sub.sentHook != nil {
				l.sub.sentHook(l.sub)
			}
			l.handedOut()
		case runs <- run:
			l.handedOutRun(len(run))
		case ev := <-l.events:
			l.handle(ev)
		case <-l.sess.Context().Done():
			ended = true
		case <-stopCh:
			stopping, stopCh = true, nil
		}
		if sending {
			l.sub.handout.RUnlock()
		}
		if ended {
			l.drain(false)
			return
		}
		l.publishStats()
	}
	l.drain(true)
}

// read buffers rec and makes it due if its key is free; a record the
// partition's last owner finished is settled at once, never handed out.
func (l *partLoop) read(rec *sarama.ConsumerMessage) {
	p := &pending{rec: rec, size: int64(len(rec.Key) + len(rec.Value))}
	l.wm.add(rec.Offset, p.size)
	if l.skip.finished(rec.Offset) {
		l.sub.accepted.skipped(l.k)
		l.finish(rec.Offset, nil, time.Now())
		return
	}
	switch l.sub.cfg.Ordering {
	case OrderingUnordered:
		l.ready = append(l.ready, p)
		return
	case OrderingKey:
		p.key = string(rec.Key)
	}
	q := l.queues[p.key]
	l.queues[p.key] = append(q, p)
	if len(q) == 0 {
		l.ready = append(l.ready, p)
	}
}

// due returns the message for the first due record, building it once.
func (l *partLoop) due() *message.Message {
	for len(l.ready) > 0 {
		p := l.ready[0]
		msg, err := l.build(p)
		if err != nil {
			// Hold the record (and the watermark): it is retried after
			// NackResendSleep (at least its default), never skipped.
			l.sub.logger.Error("Cannot unmarshal record; retrying it later", err,
				watermill.LogFields{"partition": l.k.partition, "offset": p.rec.Offset})
			l.ready = l.ready[1:]
			l.resendAfter(p, max(l.sub.cfg.NackResendSleep, NackResendSleepDefault))
			continue
		}
		return msg
	}
	return nil
}

// build returns the message to hand out for p, building it once.
func (l *partLoop) build(p *pending) (*message.Message, error) {
	if p.msg != nil {
		return p.msg, nil
	}
	msg, err := Marshaler{}.Unmarshal(p.rec)
	if err != nil {
		return nil, err
	}
	p.d = &ackgap.Delivery{
		ConsumerGroup: l.sub.cfg.ConsumerGroup, Partition: p.rec.Partition, Offset: p.rec.Offset, HasOffset: true,
		Key: string(p.rec.Key), HasKey: true,
		Confirmation: ackgap.ConfirmationReported, Destination: p.rec.Topic, Received: time.Now(),
		Watermark: l.wm.offset(), HasWatermark: l.sub.cfg.Progress != nil,
	}
	ctx, cancel := context.WithCancel(l.sub.msgCtx)
	ctx = context.WithValue(ctx, recordKey{}, recordInfo{
		partition: p.rec.Partition, offset: p.rec.Offset, key: p.rec.Key, timestamp: p.rec.Timestamp,
	})
	p.cancel = cancel
	msg.SetContext(ackgap.WithDelivery(ctx, p.d))
	p.msg = msg
	return msg, nil
}

// dueRun returns the run to hand out next (subscribeRuns): the first due
// record's message and, under OrderingKey, the messages of the records
// queued behind it under its key, in offset order, up to keyRun and the
// room left under MaxInFlight. A record that cannot be unmarshalled ends
// the run before it (it is handled when it is due itself).
func (l *partLoop) dueRun() []*message.Message {
	head := l.due()
	if head == nil {
		return nil
	}
	l.runBuf = append(l.runBuf[:0], head)
	if l.sub.cfg.Ordering != OrderingKey {
		return l.runBuf
	}
	limit := min(l.sub.keyRun, l.sub.cfg.MaxInFlight-l.inflight)
	q := l.queues[l.ready[0].key] // q[0] is the first due record
	for _, p := range q[1:] {
		if len(l.runBuf) >= limit {
			break
		}
		msg, err := l.build(p)
		if err != nil {
			break
		}
		l.runBuf = append(l.runBuf, msg)
	}
	return l.runBuf
}

// handedOut records that the first due record's message was sent, and
// watches it.
func (l *partLoop) handedOut() {
	p := l.ready[0]
	l.ready = l.ready[1:]
	msg, d, cancel := p.msg, p.d, p.cancel
	p.msg, p.cancel = nil, nil // a nack hands out a fresh copy
	l.inflight++
	l.sub.inflight.Add(1)
	go l.watch(p, msg, d, cancel)
}

// handedOutRun records that the run of the first due record, its first n
// records of its key, was sent, and watches its messages; one message is
// handed out as by handedOut.
func (l *partLoop) handedOutRun(n int) {
	l.runBuf = nil // the receiver holds it now
	if n == 1 {
		l.handedOut()
		return
	}
	p := l.ready[0]
	l.ready = l.ready[1:]
	rs := &keyRun{size: n, left: n}
	for _, m := range l.queues[p.key][:n] {
		msg, d, cancel := m.msg, m.d, m.cancel
		m.msg, m.cancel, m.run = nil, nil, rs
		go l.watch(m, msg, d, cancel)
	}
	l.inflight += n
	l.sub.inflight.Add(int64(n))
}

// watch waits for msg's ack or nack, ends its context and passes it to the
// loop (or, when the loop is gone, settles it as not confirmed).
func (l *partLoop) watch(p *pending, msg *message.Message, d *ackgap.Delivery, cancel context.CancelFunc) {
	defer l.sub.settledOne()
	defer cancel()
	ev := partEvent{p: p, d: d}
	select {
	case <-msg.Acked():
		ev.kind, ev.at = evAcked, time.Now()
	case <-msg.Nacked():
		ev.kind, ev.at = evNacked, time.Now()
		d.Settle(ackgap.Settlement{At: ev.at})
	case <-l.sub.hardStop:
		d.Settle(ackgap.Settlement{At: time.Now(), Err: errGivenUp})
		return
	}
	select {
	case l.events <- ev:
	case <-l.done:
		if ev.kind == evAcked {
			d.Settle(ackgap.Settlement{Acked: true, At: ev.at, Err: errReleased})
		}
	}
}

// handle applies one event from a watcher or a resend timer.
func (l *partLoop) handle(ev partEvent) {
	switch ev.kind {
	case evAcked:
		l.inflight--
		if ev.p.run != nil {
			ev.p.acked = true
			l.runSettled(ev.p)
		} else {
			l.next(ev.p)
		}
		l.finish(ev.p.rec.Offset, ev.d, ev.at)
	case evNacked:
		l.inflight--
		if ev.p.run != nil {
			ev.p.run.nacked = true
			l.runSettled(ev.p)
		} else {
			l.resendLater(ev.p)
		}
	case evResend:
		if !l.draining {
			l.ready = append(l.ready, ev.p)
		}
	}
}

// finish settles offset as done for the watermark (acked by d at at; d
// nil for a record skipped as finished by an earlier owner) and tells the
// committer: the watermark moved, or the offset is one more finished
// above it.
func (l *partLoop) finish(offset int64, d *ackgap.Delivery, at time.Time) {
	l.wm.ack(offset, d, at)
	acked := l.wm.advance()
	wm := l.wm.offset()
	if offset > wm {
		l.fin.add(offset)
	}
	if l.com == nil {
		return
	}
	switch {
	case len(acked) > 0:
		if l.fin.size() > l.sub.cfg.MaxBufferedRecords {
			l.fin.prune(wm) // between commits, so the set stays bounded
		}
		l.com.advance(l.k, wm, acked)
	case offset > wm:
		l.com.finished(l.k, wm)
	}
}

// next frees p's key: the key's next record becomes due.
func (l *partLoop) next(p *pending) {
	if l.sub.cfg.Ordering == OrderingUnordered {
		return
	}
	q := l.queues[p.key][1:]
	if len(q) == 0 {
		delete(l.queues, p.key)
		return
	}
	l.queues[p.key] = q
	l.ready = append(l.ready, q[0])
}

// runSettled counts p, a message of a run, settled; once the whole run
// is, its acked messages leave the key's queue and the key's first
// message not acked becomes due: at once when the run was all acked,
// after NackResendSleep when one of it was nacked (it holds its key, and
// the key's later messages come after it).
func (l *partLoop) runSettled(p *pending) {
	rs := p.run
	p.run = nil
	if rs.left--; rs.left > 0 {
		return
	}
	q := l.queues[p.key]
	kept := 0
	for _, m := range q[:rs.size] {
		if !m.acked {
			q[kept] = m
			kept++
		}
	}
	q = append(q[:kept], q[rs.size:]...)
	if len(q) == 0 {
		delete(l.queues, p.key)
		return
	}
	l.queues[p.key] = q
	if rs.nacked {
		l.resendLater(q[0])
		return
	}
	l.ready = append(l.ready, q[0])
}

// resendLater makes p due again after NackResendSleep. p stays the head
// of its key, so nothing of its key overtakes it.
func (l *partLoop) resendLater(p *pending) { l.resendAfter(p, l.sub.cfg.NackResendSleep) }

// resendAfter makes p due again after sleep (at once when sleep <= 0).
func (l *partLoop) resendAfter(p *pending, sleep time.Duration) {
	if sleep <= 0 {
		l.ready = append(l.ready, p)
		return
	}
	time.AfterFunc(sleep, func() {
		select {
		case l.events <- partEvent{kind: evResend, p: p}:
		case <-l.done:
		}
	})
}

// drain ends the partition: no more records are handed out; those in
// flight get until hardStop (closing) or HoldTimeout (revoked); then
// the watermark is committed and the partition released.
func (l *partLoop) drain(closing bool) {
	l.draining = true
	var deadline <-chan time.Time
	if !closing {
		t := time.NewTimer(l.sub.cfg.HoldTimeout)
		defer t.Stop()
		deadline = t.C
	}
wait:
	for l.inflight > 0 {
		select {
		case ev := <-l.events:
			l.handle(ev)
		case <-deadline:
			l.sub.logger.Info("Partition revoked with messages still in flight after HoldTimeout; releasing it (their acks will not be committed)",
				watermill.LogFields{"partition": l.k.partition, "in_flight": l.inflight})
			break wait
		case <-l.sub.hardStop:
			break wait
		}
	}
	l.publishStats()
	if l.com != nil {
		l.com.release(l.k)
	}
	if !closing && l.inflight > 0 && l.sub.cfg.holdRevoked {
		l.holdReleased()
	}
}

// holdReleased holds a revoked partition whose messages outlasted
// HoldTimeout until they are settled, or hardStop (ParallelConfig's
// holdRevoked): the claim, and so the member's rejoin, waits for them. Their
// acks come after the partition's last commit and are settled
// unconfirmed.
func (l *partLoop) holdReleased() {
	l.sub.logger.Info("Holding the revoked partition's claim until its messages in flight are settled; the member rejoins the group after them",
		watermill.LogFields{"partition": l.k.partition, "in_flight": l.inflight})
	for l.inflight > 0 {
		select {
		case ev := <-l.events:
			switch ev.kind {
			case evAcked:
				l.inflight--
				ev.d.Settle(ackgap.Settlement{Acked: true, At: ev.at, Err: errReleased})
			case evNacked:
				l.inflight--
			case evResend:
			}
		case <-l.sub.hardStop:
			return
		}
	}
}

func (l *partLoop) publishStats() {
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	l.stats.Buffered = l.wm.len()
	l.stats.BufferedBytes = l.wm.bytes
	l.stats.PeakBuffered = max(l.stats.PeakBuffered, l.stats.Buffered)
	l.stats.InFlight = l.inflight
	l.stats.Watermark = l.wm.offset()
}

// recordKey is the context key of a record's Kafka coordinates under
// ParallelSubscriber (watermill-kafka's own keys are unexported).
type recordKey struct{}

type recordInfo struct {
	partition int32
	offset    int64
	key       []byte
	timestamp time.Time
}

func recordFromContext(ctx context.Context) (recordInfo, bool) {
	r, ok := ctx.Value(recordKey{}).(recordInfo)
	return r, ok
}
