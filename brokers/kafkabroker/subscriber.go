package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
)

var (
	_ message.Subscriber         = (*Subscriber)(nil)
	_ message.Publisher          = (*kafka.Publisher)(nil)
	_ kafka.MarshalerUnmarshaler = Marshaler{}
)

// ErrSubscriberClosed is returned by [Subscriber.Subscribe] after Close.
var ErrSubscriberClosed = errors.New("kafkabroker: subscriber closed")

// ErrCloseTimedOut is wrapped by the error of [Subscriber.Close] when the
// consumer did not leave the group within LeaveTimeout (see
// [SubscriberConfig]); Close returned anyway, and messages it did not
// settle are redelivered.
var ErrCloseTimedOut = errors.New("kafkabroker: close timed out")

// Subscriber is a watermill-kafka consumer-group subscriber that shuts
// down without cutting in-flight messages short. It is safe for concurrent
// use; Close may be called more than once.
//
// watermill-kafka on its own cancels every in-flight message's context the
// moment its Close is called (and Watermill's router calls it as soon as
// its own Close starts), so a handler in the middle of its transaction
// rolls back and its message is redelivered after the restart. Subscriber
// instead stops handing out messages, waits up to CloseTimeout until every
// message already handed out is nacked, or acked with its offset committed,
// and only then closes the consumer, waiting up to LeaveTimeout for it to
// leave the group: Close returns within CloseTimeout + LeaveTimeout even
// when the broker stopped answering. The same happens when the ctx given
// to Subscribe ends (the router cancels it on Close as well, and when
// Run's ctx ends): the channel closes within CloseTimeout + LeaveTimeout.
// A stop that gave up logs [LogStopGaveUp].
type Subscriber struct {
	inner  *kafka.Subscriber
	cfg    SubscriberConfig
	sc     *sarama.Config
	logger watermill.LoggerAdapter
	track  *tracker

	mu     sync.Mutex
	closed bool
	subs   []*subscription
	// commits is the Kafka client the tracker sends offset commits with,
	// connected by the first Subscribe.
	commits sarama.Client

	closeOnce sync.Once
	closeErr  error
}

// NewSubscriber returns a consumer-group Subscriber with the settings of
// cfg (see [SubscriberConfig] and [SubscriberConfig.SaramaConfig]).
// Headers arrive as metadata ([Marshaler]). It connects to Kafka only when
// Subscribe is called. logger may be nil (no logs). It returns an error
// wrapping "invalid config" naming every bad field at once.
func NewSubscriber(cfg *SubscriberConfig, logger watermill.LoggerAdapter) (*Subscriber, error) {
	if cfg == nil {
		return nil, errors.New("invalid config: SubscriberConfig is nil: Brokers and ConsumerGroup are required")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	sc := c.SaramaConfig()
	if err := c.checkSarama(sc); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	t := newTracker(sc.Consumer.Offsets.AutoCommit.Enable, c.CommitInterval, c.ConsumerGroup, sc,
		logger.With(watermill.LogFields{"consumer_group": c.ConsumerGroup}))
	t.progress = c.Progress
	if sc.Consumer.Offsets.AutoCommit.Enable {
		// The tracker's committer makes the periodic commits, so that each
		// commit's return is seen (ackgap.Delivery); Sarama keeps
		// auto-commit on for the commit at the end of each session.
		sc.Consumer.Offsets.AutoCommit.Interval = saramaTickerIdle
	}
	inner, err := kafka.NewSubscriber(kafka.SubscriberConfig{
		Brokers:               c.Brokers,
		Unmarshaler:           Marshaler{},
		OverwriteSaramaConfig: sc,
		ConsumerGroup:         c.ConsumerGroup,
		NackResendSleep:       c.NackResendSleep, // NackResendSleepNone is kafka.NoSleep
		Tracer:                tracer{t: t},
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("kafkabroker: subscriber: %w", err)
	}
	return &Subscriber{inner: inner, cfg: c, sc: sc, logger: logger, track: t}, nil
}

// Subscribe joins the consumer group for topic and returns its messages.
// The channel is closed once the subscription stopped: after Close, or
// after ctx ended and in-flight messages were settled (see [Subscriber]).
// Each partition hands out its next message only after the previous one
// was acked (and its offset committed) or, after a nack, redelivers the
// same message. It returns [ErrSubscriberClosed] after Close.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := s.connectCommits(); err != nil {
		return nil, fmt.Errorf("kafkabroker: subscribe to %q: %w", topic, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSubscriberClosed
	}
	// The consumer lives until the drain is over, not until ctx ends: the
	// in-flight messages' contexts derive from it.
	innerCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	in, err := s.inner.Subscribe(innerCtx, topic)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kafkabroker: subscribe to %q: %w", topic, err)
	}
	sub := &subscription{
		topic:       topic,
		timeout:     s.cfg.CloseTimeout,
		leave:       s.cfg.LeaveTimeout,
		logger:      s.logger.With(watermill.LogFields{"topic": topic, "consumer_group": s.cfg.ConsumerGroup}),
		track:       s.track,
		stopCh:      make(chan struct{}),
		hardStop:    make(chan struct{}),
		abandon:     make(chan struct{}),
		cancelInner: cancel,
		done:        make(chan struct{}),
	}
	s.subs = append(s.subs, sub)
	out := make(chan *message.Message)
	go sub.forward(in, out)
	go func() {
		select {
		case <-ctx.Done():
			sub.stop()
			// The consumer closes the channel once Sarama let go of the
			// group, which waits on the broker: LeaveTimeout bounds it, as
			// in Close.
			t := time.NewTimer(s.cfg.LeaveTimeout)
			defer t.Stop()
			select {
			case <-sub.done:
			case <-t.C:
				sub.giveUp()
			}
		case <-sub.done:
		}
	}()
	return out, nil
}

// connectCommits connects the Kafka client offset commits are sent with,
// once, without holding s.mu.
func (s *Subscriber) connectCommits() error {
	s.mu.Lock()
	connected := s.commits != nil
	s.mu.Unlock()
	if connected {
		return nil
	}
	client, err := sarama.NewClient(s.cfg.Brokers, s.sc)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.commits != nil || s.closed {
		return client.Close() // another Subscribe won, or Close came first (Subscribe then returns ErrSubscriberClosed)
	}
	s.commits = client
	s.track.setClient(client)
	return nil
}

// Rewinds counts the partitions this subscriber started below the group's
// committed offset because the database was behind (SubscriberConfig.Progress).
func (s *Subscriber) Rewinds() *Rewinds { return &s.track.rewinds }

// Close stops every subscription: no new message is handed out, messages
// in flight get up to CloseTimeout to be acked and committed (or nacked),
// then the consumer leaves the group, within LeaveTimeout, and the
// channels close. It returns once everything stopped, or with an error
// wrapping [ErrCloseTimedOut] when the consumer did not stop within
// LeaveTimeout (Sarama's close then goes on in the background until the
// broker answers or the connection fails); either way within CloseTimeout
// + LeaveTimeout. Later calls return the first call's result.
func (s *Subscriber) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		subs := slices.Clone(s.subs)
		s.mu.Unlock()
		var wg sync.WaitGroup
		for _, sub := range subs {
			wg.Go(sub.stop) // each within CloseTimeout
		}
		wg.Wait()
		left := make(chan error, 1)
		go func() { left <- s.inner.Close() }()
		timer := time.NewTimer(s.cfg.LeaveTimeout)
		defer timer.Stop()
		select {
		case err := <-left:
			if err != nil {
				s.closeErr = fmt.Errorf("kafkabroker: close: %w", err)
			}
		case <-timer.C:
			s.closeErr = fmt.Errorf("%w: the consumer did not leave group %q within LeaveTimeout (%s); "+
				"unsettled messages stay uncommitted and are redelivered", ErrCloseTimedOut, s.cfg.ConsumerGroup, s.cfg.LeaveTimeout)
			s.logger.Error("Kafka consumer did not stop in time; closing without it", s.closeErr,
				watermill.LogFields{"leave_timeout": s.cfg.LeaveTimeout.String()})
			for _, sub := range subs {
				sub.giveUp()
			}
		}
		for _, sub := range subs {
			<-sub.done // the consumer closed its channels, or abandon made forward return
		}
		s.mu.Lock()
		commits := s.commits
		s.mu.Unlock()
		if commits != nil {
			// Commits still in flight fail and settle unconfirmed.
			if err := commits.Close(); err != nil && s.closeErr == nil {
				s.closeErr = fmt.Errorf("kafkabroker: close: %w", err)
			}
		}
	})
	return s.closeErr
}

// subscription is one Subscribe call: it forwards watermill-kafka's
// messages and tracks the ones handed out until they are settled.
type subscription struct {
	topic   string
	timeout time.Duration
	leave   time.Duration // LeaveTimeout
	logger  watermill.LoggerAdapter
	track   *tracker

	// Messages of this subscription settled without a confirmed commit:
	// acked but not confirmed (a commit refused, unanswered or cut short
	// by the stop), and handed out but never acked (given up at
	// CloseTimeout). For LogStopGaveUp.
	unconfirmed, unacked atomic.Int64
	abandonOnce          sync.Once

	mu       sync.Mutex     // orders inflight.Add against stop
	stopCh   chan struct{}  // closed when stopping starts: hand out nothing more
	inflight sync.WaitGroup // messages handed out and not yet settled
	hardStop chan struct{}  // closed when waiting is over
	abandon  chan struct{}  // closed when the consumer did not stop within LeaveTimeout

	cancelInner context.CancelFunc
	stopOnce    sync.Once
	done        chan struct{} // closed after the output channel
}

func (sub *subscription) forward(in <-chan *message.Message, out chan<- *message.Message) {
	defer close(sub.done)
	defer close(out)
	for {
		var msg *message.Message
		select {
		case m, ok := <-in:
			if !ok {
				return
			}
			msg = m
		case <-sub.abandon:
			// The consumer is stuck (Close gave up on it): what it still
			// holds stays unacked and uncommitted.
			return
		}
		d := sub.register(msg)
		if d == nil {
			// Stopping: the message stays unacked; watermill-kafka drops
			// it when the consumer is cancelled, uncommitted.
			continue
		}
		select {
		case out <- msg:
			go sub.watch(msg, d)
		case <-sub.stopCh:
			sub.track.forget(d)
			sub.inflight.Done()
		}
	}
}

func (sub *subscription) register(msg *message.Message) *delivery {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	select {
	case <-sub.stopCh:
		return nil
	default:
	}
	sub.inflight.Add(1)
	return sub.track.add(sub.topic, msg)
}

// watch settles d: nacked, or acked and its offset committed (or its
// partition's claim ended, so nothing more will be committed for it). It
// reports the outcome to d.ack (ackgap's confirmation hook); with interval
// commits the session's committer reports the commit instead.
func (sub *subscription) watch(msg *message.Message, d *delivery) {
	defer sub.inflight.Done()
	defer sub.track.forget(d)
	select {
	case <-msg.Acked():
		ackedAt := time.Now()
		select {
		case <-d.committed:
			if d.commitErr != nil {
				sub.unconfirmed.Add(1)
			}
			sub.track.settleCommitted(d)
		case <-d.claimDone:
			select {
			case <-d.committed: // marked just before the claim ended
				sub.track.settleCommitted(d)
			default:
				sub.unconfirmed.Add(1)
				d.ack.Settle(ackgap.Settlement{Acked: true, At: ackedAt, Err: errClaimEnded})
			}
		case <-sub.hardStop:
			sub.unconfirmed.Add(1)
			d.ack.Settle(ackgap.Settlement{Acked: true, At: ackedAt, Err: errStopped})
		}
	case <-msg.Nacked():
		d.ack.Settle(ackgap.Settlement{At: time.Now()})
	case <-sub.hardStop:
		sub.unacked.Add(1)
		d.ack.Settle(ackgap.Settlement{At: time.Now(), Err: errGivenUp})
	}
}

// giveUp stops waiting for the consumer, which did not let go within
// LeaveTimeout (a broker or coordinator that stopped answering): forward
// returns, closing the channel, and LogStopGaveUp says what was not
// committed. Sarama's close goes on in the background until the broker
// answers or the connection fails.
func (sub *subscription) giveUp() {
	sub.abandonOnce.Do(func() {
		sub.logger.Error(LogStopGaveUp, ErrCloseTimedOut, watermill.LogFields{
			"leave_timeout": sub.leave.String(),
			"unconfirmed":   sub.unconfirmed.Load(), "unacked": sub.unacked.Load()})
		close(sub.abandon)
	})
}

// stop drains the subscription and cancels its consumer; concurrent and
// later calls wait for the first.
func (sub *subscription) stop() {
	sub.stopOnce.Do(func() {
		sub.mu.Lock()
		close(sub.stopCh)
		sub.mu.Unlock()
		drained := make(chan struct{})
		go func() {
			sub.inflight.Wait()
			close(drained)
		}()
		timer := time.NewTimer(sub.timeout)
		select {
		case <-drained:
		case <-timer.C:
			sub.logger.Info("In-flight messages not settled within CloseTimeout; cancelling them (they will be redelivered)",
				watermill.LogFields{"close_timeout": sub.timeout.String()})
		}
		timer.Stop()
		close(sub.hardStop)
		sub.cancelInner()
		<-drained
	})
}
