package kafkabroker

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// Ordering says which records of one partition [ParallelSubscriber] may
// hand out while others are still in flight, as in the Confluent Parallel
// Consumer's ordering modes.
type Ordering int

const (
	// OrderingKey (the default): records with the same Kafka record key
	// are handed out strictly one after another, in offset order; records
	// of other keys run concurrently. A record without a key is its own
	// key only if it has none: all keyless records of a partition share
	// the empty key. kafkabroker's publisher keys every record (metadata
	// "partition_key", else the event id).
	OrderingKey Ordering = iota
	// OrderingPartition: one record of a partition at a time, in offset
	// order, whatever MaxInFlight; the default [Subscriber] is this
	// engine in this mode (with MaxInFlight 1).
	OrderingPartition
	// OrderingUnordered: any record of the partition may run while others
	// are in flight, up to MaxInFlight. Use it when handlers commute (the
	// inbox and guarded transitions make each record's effect
	// independent of the order).
	OrderingUnordered
)

// String returns "key", "partition" or "unordered".
func (o Ordering) String() string {
	switch o {
	case OrderingKey:
		return "key"
	case OrderingPartition:
		return "partition"
	case OrderingUnordered:
		return "unordered"
	default:
		return fmt.Sprintf("Ordering(%d)", int(o))
	}
}

// Defaults of [ParallelConfig].
const (
	// MaxInFlightDefault is the default ParallelConfig.MaxInFlight: records
	// of one partition handed out and not yet acked or nacked.
	MaxInFlightDefault = 64
	// MaxBufferedRecordsDefault is the default
	// ParallelConfig.MaxBufferedRecords: records of one partition read from
	// Kafka and not yet acked (in flight, waiting behind their key, or
	// acked above a gap are all counted until the watermark passes them).
	MaxBufferedRecordsDefault = 1024
	// MaxBufferedBytesDefault is the default ParallelConfig.MaxBufferedBytes
	// (16 MiB): key plus value bytes of the records counted by
	// MaxBufferedRecords.
	MaxBufferedBytesDefault = 16 << 20
	// CommitTimeoutDefault is the default ParallelConfig.CommitTimeout
	// (5 s): Kafka's broker default offsets.commit.timeout.ms (5000 ms),
	// the longest a group coordinator waits for the offsets topic's
	// replicas before it answers an OffsetCommit. A coordinator that has
	// not answered by then is stalled or unreachable, not busy. It equals
	// CommitMargin, so the default RebalanceTimeout (HoldTimeout +
	// CommitMargin) leaves a revoked partition room for its last commit.
	CommitTimeoutDefault = 5 * time.Second
)

// ParallelConfig configures [NewParallelSubscriber]. The embedded
// SubscriberConfig's fields keep their meaning and defaults (CommitInterval
// as below, the same as for [Subscriber]); its ConfigureSarama must leave
// auto-commit off. Fields left zero take the default named in their doc.
//
// CommitInterval: zero (the default) sends an offset commit as soon as a
// partition's watermark moved and no commit is in flight, so commits
// coalesce by themselves under load (one request for every partition that
// moved while the previous one was on the wire); positive, one commit
// every CommitInterval. Either way one OffsetCommit request carries every
// partition of the member, never one request per message.
type ParallelConfig struct {
	SubscriberConfig
	// Ordering chooses what may run concurrently inside one partition.
	// Default OrderingKey.
	Ordering Ordering
	// MaxInFlight is how many records of one partition may be handed out
	// and not yet acked or nacked at once. Default MaxInFlightDefault (64);
	// at least 1, at most MaxBufferedRecords.
	MaxInFlight int
	// MaxBufferedRecords bounds the records of one partition read and not
	// yet below its watermark: at the limit the partition stops reading
	// from Kafka (Sarama then pauses fetching it) until the watermark
	// moves. Nothing is dropped. Default MaxBufferedRecordsDefault (1024).
	MaxBufferedRecords int
	// MaxBufferedBytes bounds the key and value bytes of the same records;
	// a single record larger than the limit is still read when nothing
	// else is buffered. Default MaxBufferedBytesDefault (16 MiB); at least
	// 1.
	MaxBufferedBytes int64
	// CommitTimeout bounds one OffsetCommit request (and the OffsetFetch
	// that checks an unanswered one): the subscriber's offset commits go
	// on a Kafka client of their own whose Net.ReadTimeout is nine tenths
	// of CommitTimeout (its Net.WriteTimeout and Net.DialTimeout at most
	// that), instead of Sarama's Net.ReadTimeout (30 s by default, shared
	// with fetches). A commit unanswered after it settles the messages it
	// covered unconfirmed ([ErrCommitRefused]) and is retried; since it
	// may still land late, the committed offsets are checked (see
	// [ParallelSubscriber]). The lookup of the group coordinator (Sarama's
	// FindCoordinator and its Metadata.Retry) counts in it: a request
	// whose lookup or answer takes longer is given up on as unanswered,
	// and no other is sent until Sarama returned from it. Default
	// CommitTimeoutDefault (5 s);
	// more than 0 and at most RebalanceTimeout - HoldTimeout (a revoked
	// partition waits up to HoldTimeout for its records in flight, then
	// commits its watermark, all within the rebalance).
	CommitTimeout time.Duration

	// holdRevoked, set by NewSubscriber: a revoked partition whose
	// messages are still in flight after HoldTimeout commits its
	// watermark and then holds its claim until they are settled (or the
	// stop's CloseTimeout ends), so the member rejoins only then, as a
	// consumer whose handler overran max.poll.interval.ms does; the group
	// removes it after RebalanceTimeout. Without it the member rejoins at
	// once and may take new records of the partition while the old ones
	// still run, which one message per partition must not.
	holdRevoked bool
}

// WithDefaults returns a copy of c with every zero field set to its
// default.
func (c ParallelConfig) WithDefaults() ParallelConfig {
	c.SubscriberConfig = c.SubscriberConfig.WithDefaults()
	if c.MaxInFlight == 0 {
		c.MaxInFlight = MaxInFlightDefault
	}
	if c.MaxBufferedRecords == 0 {
		c.MaxBufferedRecords = max(MaxBufferedRecordsDefault, c.MaxInFlight)
	}
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = MaxBufferedBytesDefault
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = CommitTimeoutDefault
	}
	return c
}

func (c ParallelConfig) validate() error {
	var errs []error
	if err := c.SubscriberConfig.validate(); err != nil {
		errs = append(errs, errors.Unwrap(err))
	}
	if c.Ordering < OrderingKey || c.Ordering > OrderingUnordered {
		errs = append(errs, fmt.Errorf("Ordering is %d, want OrderingKey, OrderingPartition or OrderingUnordered", int(c.Ordering)))
	}
	if c.MaxInFlight < 1 {
		errs = append(errs, fmt.Errorf("MaxInFlight is %d, must be at least 1", c.MaxInFlight))
	}
	if c.MaxBufferedRecords < c.MaxInFlight {
		errs = append(errs, fmt.Errorf("MaxBufferedRecords is %d, must be at least MaxInFlight (%d)", c.MaxBufferedRecords, c.MaxInFlight))
	}
	if c.MaxBufferedBytes < 1 {
		errs = append(errs, fmt.Errorf("MaxBufferedBytes is %d, must be at least 1", c.MaxBufferedBytes))
	}
	if c.CommitTimeout <= 0 || c.HoldTimeout+c.CommitTimeout > c.RebalanceTimeout {
		errs = append(errs, fmt.Errorf("CommitTimeout is %s, must be more than 0 and at most RebalanceTimeout (%s) - HoldTimeout (%s): a revoked partition waits up to HoldTimeout for its records in flight, then commits its watermark, within the rebalance", c.CommitTimeout, c.RebalanceTimeout, c.HoldTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// SaramaConfig returns the Sarama config NewParallelSubscriber uses for c:
// SubscriberConfig.SaramaConfig's settings with Sarama's offset manager
// never committing (auto-commit off; ParallelSubscriber sends its own
// OffsetCommit requests to the group coordinator and reads their
// per-partition answers).
func (c ParallelConfig) SaramaConfig() *sarama.Config {
	return c.saramaBase().SaramaConfig()
}

// commitSarama returns a copy of sc, the subscriber's Sarama config, for
// the client offset commits and their checks go on: its requests time out
// within CommitTimeout rather than after Net.ReadTimeout.
func (c ParallelConfig) commitSarama(sc *sarama.Config) *sarama.Config {
	cc := *sc
	// A little below CommitTimeout, which bounds the whole request
	// (offsetCommitter.bounded): an unanswered request to a known
	// coordinator then ends as Sarama's own timeout.
	cc.Net.ReadTimeout = c.CommitTimeout - c.CommitTimeout/10
	cc.Net.WriteTimeout = min(cc.Net.WriteTimeout, c.CommitTimeout)
	cc.Net.DialTimeout = min(cc.Net.DialTimeout, c.CommitTimeout)
	return &cc
}

// saramaBase is the SubscriberConfig whose Sarama config has auto-commit
// off: CommitInterval means the parallel subscriber's own commits here,
// not Sarama's.
func (c ParallelConfig) saramaBase() SubscriberConfig {
	base := c.SubscriberConfig.WithDefaults() // FetchMaxWait follows the real CommitInterval
	base.CommitInterval = 0
	return base
}
