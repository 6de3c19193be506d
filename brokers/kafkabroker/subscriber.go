package kafkabroker

import (
	"context"
	"errors"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

var (
	_ message.Subscriber         = (*Subscriber)(nil)
	_ message.Publisher          = (*kafka.Publisher)(nil)
	_ kafka.MarshalerUnmarshaler = Marshaler{}
)

// ErrSubscriberClosed is returned by [Subscriber.Subscribe] after Close.
var ErrSubscriberClosed = errors.New("kafkabroker: subscriber closed")

// ErrCloseTimedOut is wrapped by the error of [Subscriber.Close] when the
// consumer did not commit its last offsets and leave the group within
// LeaveTimeout (see [SubscriberConfig]); Close returned anyway, and
// messages whose offsets it did not commit are redelivered.
var ErrCloseTimedOut = errors.New("kafkabroker: close timed out")

// Subscriber is the default consumer-group subscriber: one message of a
// partition at a time, in offset order. It is the watermark engine of
// [ParallelSubscriber] with [OrderingPartition] and MaxInFlight 1, so it
// has the same offset commits, checks and shutdown; only the concurrency
// differs. It is safe for concurrent use; Close may be called more than
// once.
//
// Order. A partition hands out its next message once the previous one was
// acked; after a nack it hands out the same record again, after
// NackResendSleep. The next message does not wait for the offset commit
// of the previous one.
//
// Commits. Sarama's offset manager is off: the subscriber sends each
// OffsetCommit request to the group coordinator itself and reads its
// answer per partition. With CommitInterval zero (the default) a commit
// goes out as soon as a partition's offset moved and no commit is on the
// wire, so commits coalesce under load (one request for every partition
// that moved meanwhile); with CommitInterval set, one every
// CommitInterval. Each request is bounded by CommitTimeoutDefault (5 s),
// the group coordinator's lookup included. A message's ackgap.Delivery is
// settled confirmed only when a commit covering it was accepted; a
// refused or unanswered commit settles it with an error wrapping
// ackgap.ErrAckNotConfirmed and [ErrCommitRefused] and is retried. A
// crash replays the message in flight and those acked whose commit was
// not yet accepted; the inbox skips what was applied.
//
// Regressions. A commit that was not answered may land late and move the
// group's committed offset backwards; the subscriber checks the committed
// offsets after one, reports a regression ([ErrOffsetRegressed], a warn
// log, [PartitionStats].Regressions) and commits the partition's offset
// again (see "Regressions" at [ParallelSubscriber]).
//
// Stop. watermill-kafka on its own cancels every in-flight message's
// context the moment its Close is called, so a handler in the middle of
// its transaction rolls back and its message is redelivered. Subscriber
// instead stops handing out messages, waits up to CloseTimeout until every
// message already handed out is acked or nacked, cancels the rest,
// commits every partition's offset and leaves the group, waiting up to
// LeaveTimeout for the commits and the leave: Close returns within
// CloseTimeout + LeaveTimeout even when the broker or the coordinator
// lookup stopped answering. The same happens when the ctx given to
// Subscribe ends (the router cancels it on Close as well, and when Run's
// ctx ends): the channel closes within CloseTimeout + LeaveTimeout. A
// stop that gave up logs [LogStopGaveUp].
//
// Rebalance. A revoked partition waits up to HoldTimeout for its message
// in flight, then commits its offset and is released. A message still in
// flight after HoldTimeout holds the member's claim until it is settled:
// the member rejoins the group only then (the group removes it after
// RebalanceTimeout), so it never runs a partition's next record while an
// older one is still in its handler; that message's ack is not committed,
// and the partition's next owner gets it again (the inbox skips it if it
// was applied).
type Subscriber struct {
	p *ParallelSubscriber
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
	if err := c.checkSarama(c.SaramaConfig()); err != nil {
		return nil, err
	}
	// The engine sends its own commits: Sarama's auto-commit stays off
	// whatever CommitInterval says (checkSarama above held ConfigureSarama
	// to CommitInterval's setting, as it always did).
	configure := c.ConfigureSarama
	c.ConfigureSarama = func(sc *sarama.Config) {
		if configure != nil {
			configure(sc)
		}
		sc.Consumer.Offsets.AutoCommit.Enable = false
	}
	p, err := NewParallelSubscriber(&ParallelConfig{SubscriberConfig: c, Ordering: OrderingPartition, MaxInFlight: 1, holdRevoked: true}, logger)
	if err != nil {
		return nil, err
	}
	return &Subscriber{p: p}, nil
}

// Subscribe joins the consumer group for topic with a Kafka client of its
// own and returns its messages. The channel is closed once the
// subscription stopped: after Close, or after ctx ended and in-flight
// messages were settled (see [Subscriber]). Each partition hands out its
// next message only after the previous one was acked or, after a nack,
// hands out the same record again. It returns [ErrSubscriberClosed] after
// Close, and an error when the brokers cannot be reached.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return s.p.Subscribe(ctx, topic)
}

// Rewinds counts the partitions this subscriber started below the group's
// committed offset because the database was behind (SubscriberConfig.Progress).
func (s *Subscriber) Rewinds() *Rewinds { return s.p.Rewinds() }

// Stats returns a snapshot of every partition the subscriber holds now,
// ordered by topic and partition: committed offset, watermark, in flight,
// buffered records, high watermark and lag, replays skipped and
// regressions (see [PartitionStats]; SubscriberConfig.MeterProvider
// publishes the same as OpenTelemetry instruments). Safe for concurrent
// use.
func (s *Subscriber) Stats() []PartitionStats { return s.p.Stats() }

// Close stops every subscription: no new message is handed out, messages
// in flight get up to CloseTimeout to be acked (or nacked), the rest are
// cancelled, every partition's offset is committed, then the consumer
// leaves the group and the channels close. It returns once everything
// stopped, or after CloseTimeout + LeaveTimeout with an error wrapping
// [ErrCloseTimedOut] when the last commits and the leave did not finish
// (the broker or the coordinator lookup stopped answering;
// [LogStopGaveUp] says what was not committed). Later calls return the
// first call's result.
func (s *Subscriber) Close() error { return s.p.Close() }
