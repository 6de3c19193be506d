package kafkabroker

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"go.opentelemetry.io/otel/metric"
)

// VersionDefault is the Kafka protocol version ackgap's clients speak by
// default: 2.8, Sarama's own default ("full protocol coverage for that
// version"). Brokers from 2.8 through 4.x accept it, and so does kfake
// (franz-go's in-memory broker, tools/kfake; versions 1.0 to 4.0 were
// verified with Sarama 1.61.1). Versions >= 2.4 need Sarama >= 1.46.2:
// older Sarama fails consumer groups against kfake with "invalid byteslice
// length" (notes/local-brokers.md); go.mod pins 1.61.1. Do not modify.
var VersionDefault = sarama.V2_8_0_0

// VersionMin is the oldest Version accepted: Kafka 4.0 removed the request
// versions older than Kafka 2.1 (KIP-896), so an older setting breaks on
// current brokers. Do not modify.
var VersionMin = sarama.V2_1_0_0

// Defaults and limits of [SubscriberConfig].
const (
	// HoldTimeoutDefault is the default SubscriberConfig.HoldTimeout.
	// It covers package router's defaults: 30 s per attempt × 3 attempts
	// plus backoff is about 91 s (see router.MaxHoldTime).
	HoldTimeoutDefault = 2 * time.Minute
	// HoldTimeoutMax is the longest HoldTimeout accepted, ackgap's
	// counterpart of the Java consumer's max.poll.interval.ms (default
	// 300000 ms, 5 min). A partition's next message waits behind the one in
	// the handler, and a rebalance waits for every member's in-flight
	// message, stalling the whole group for up to HoldTimeout. Work that
	// takes longer belongs in the outbox: record it, ack, and let the relay
	// do it.
	HoldTimeoutMax = 5 * time.Minute
	// CommitMargin is the time a member needs after its handler returns to
	// ack, commit the offset and send JoinGroup: RebalanceTimeout must be at
	// least HoldTimeout + CommitMargin, and defaults to that.
	CommitMargin = 5 * time.Second
	// SessionTimeoutDefault is the default SessionTimeout, Sarama's default.
	SessionTimeoutDefault = 10 * time.Second
	// SessionTimeoutMin and SessionTimeoutMax bound SessionTimeout. The
	// broker enforces its own range, group.min.session.timeout.ms (Kafka
	// default 6 s; tools/kfake lowers it to 1 s) to
	// group.max.session.timeout.ms (Kafka default 30 min); a value outside
	// it fails JoinGroup with INVALID_SESSION_TIMEOUT.
	SessionTimeoutMin = time.Second
	SessionTimeoutMax = 30 * time.Minute
	// FetchMaxWaitDefault is the default FetchMaxWait when offsets are
	// committed after each ack. It was chosen when the commit went on the
	// fetch's broker connection and waited behind its long-poll (commits
	// now go on a client of their own): 200 messages took 27.6 s
	// with Sarama's 500 ms and 0.64 s with 10 ms (notes/local-brokers.md).
	// Through the router and a SQLite inbox on kfake, 4 partitions, 200
	// events (TestRoundTrip): 1 ms ~1,300 msgs/s, 10 ms ~210 msgs/s, 50 ms
	// ~45 msgs/s; CommitInterval 100 ms ~13,000 msgs/s. A lower wait costs
	// an idle consumer one fetch round trip per wait.
	FetchMaxWaitDefault = 10 * time.Millisecond
	// FetchMaxWaitIntervalDefault is the default FetchMaxWait with
	// CommitInterval set: commits no longer wait behind each fetch, so
	// Sarama's default long-poll (500 ms) saves idle round trips.
	FetchMaxWaitIntervalDefault = 500 * time.Millisecond
	// CloseTimeoutDefault is the default CloseTimeout: below package
	// router's CloseTimeoutDefault (30 s), so the router's Close sees the
	// subscriber finish.
	CloseTimeoutDefault = 20 * time.Second
	// LeaveTimeoutDefault is the default LeaveTimeout: ample for a
	// reachable broker (leaving a group takes milliseconds), and with
	// CloseTimeoutDefault still below the router's CloseTimeoutDefault.
	LeaveTimeoutDefault = 5 * time.Second
	// NackResendSleepDefault is the default NackResendSleep: watermill-kafka's
	// own default (100 ms).
	NackResendSleepDefault = 100 * time.Millisecond
	// NackResendSleepNone, as NackResendSleep, hands a nacked message out
	// again at once (watermill-kafka's kafka.NoSleep).
	NackResendSleepNone = time.Duration(-1)
)

// SubscriberConfig configures [NewSubscriber]. Fields left zero take the
// default named in their doc. Settings that are not fields are listed at
// [SubscriberConfig.SaramaConfig].
type SubscriberConfig struct {
	// Brokers are the bootstrap addresses, "host:port". Required.
	Brokers []string
	// ConsumerGroup is the Kafka consumer group. Required: without a group
	// watermill-kafka reads every partition from the start and commits
	// nothing, so every restart replays the whole topic.
	ConsumerGroup string
	// Progress, when set, reads the watermark the consumer's database
	// stored for a partition (its progress rows, e.g. pgxstore's
	// Store.ProgressReader(consumer)); at every assignment each partition
	// then starts from the lower of it and the group's committed offset,
	// so commits a database lost (failover to a standby, restore) are
	// replayed and the inbox skips what it kept. Each rewind is logged at
	// warn (LogDatabaseBehind) and counted (Rewinds). Setting it also
	// makes the subscriber fill ackgap.Delivery.Watermark, so the inbox
	// writes the progress rows (one upsert per transaction; cost in
	// benchmarks/RESULTS.md). Default nil: no progress rows, the group's
	// committed offset alone.
	Progress ProgressReader
	// HoldTimeout is the longest the handler chain may hold one message
	// before it is acked or nacked, every in-place attempt included: with
	// package router that is Config.HandlerTimeout × MaxAttempts plus the
	// backoff, which router.MaxHoldTime computes. It sets the default
	// RebalanceTimeout. Default HoldTimeoutDefault (2 min), at most
	// HoldTimeoutMax (5 min).
	HoldTimeout time.Duration
	// RebalanceTimeout is Sarama's Consumer.Group.Rebalance.Timeout, sent
	// to the broker as JoinGroup's rebalance timeout (Kafka
	// rebalance.timeout.ms): once a rebalance starts, each member has this
	// long to finish its in-flight messages and rejoin, or it is removed
	// from the group and its commits fail. A revoked partition waits up to
	// HoldTimeout for its message in flight, then commits its offset
	// (within CommitTimeoutDefault, 5 s) and is released; a message still
	// in flight then holds the member out of the group until it is
	// settled (see [Subscriber]), and its ack is not committed: the
	// message is redelivered to the partition's next owner, and the inbox
	// skips it as a duplicate.
	// So a rebalance in the middle of a stream costs a few duplicates,
	// never a double apply. Default HoldTimeout + CommitMargin; less than
	// that is a config error.
	RebalanceTimeout time.Duration
	// SessionTimeout is Sarama's Consumer.Group.Session.Timeout (Kafka
	// session.timeout.ms): a member that sends no heartbeat for this long is
	// removed from the group, and a restarted process waits this long for
	// the old member's partitions unless the old one left cleanly (Close
	// leaves the group). Sarama heartbeats from its own goroutine, so a slow
	// handler does not expire the session; the heartbeat interval is
	// SessionTimeout/3 (Kafka's advice: at most a third). Default
	// SessionTimeoutDefault (10 s), within [SessionTimeoutMin,
	// SessionTimeoutMax] and the broker's range.
	SessionTimeout time.Duration
	// CommitInterval chooses how acked offsets reach Kafka; the
	// subscriber sends every OffsetCommit itself (never Sarama's offset
	// manager), so each commit's answer is observed. Zero (the default):
	// a commit goes out as soon as a partition's offset moved and no
	// commit is on the wire, so under load one request carries what was
	// acked meanwhile; the partition's next message is handed out after
	// the ack without waiting for the commit, and a crash redelivers the
	// message in flight and those acked whose commit was not yet accepted.
	// Positive: one commit every CommitInterval, and a crash (not a Close,
	// which commits every offset) replays up to CommitInterval's worth of
	// acked messages per partition. The inbox skips them as duplicates
	// either way; the interval trades that replay for fewer commits. Must
	// not be negative.
	CommitInterval time.Duration
	// FetchMaxWait is Sarama's Consumer.MaxWaitTime (Kafka fetch.max.wait.ms):
	// how long a fetch waits on the broker for new data. Default
	// FetchMaxWaitDefault (10 ms) with per-ack commits,
	// FetchMaxWaitIntervalDefault (500 ms) with CommitInterval; at least
	// 1 ms (Sarama's minimum).
	FetchMaxWait time.Duration
	// CloseTimeout bounds how long Close (or the end of Subscribe's ctx)
	// waits for messages already handed to the handler to be acked or
	// nacked. After it, their contexts are cancelled: the
	// inbox rolls their transactions back, the router nacks them (never
	// dead-letters them), and they are redelivered after a restart.
	// Default CloseTimeoutDefault (20 s); keep it below the router's
	// CloseTimeout. Must not be negative.
	CloseTimeout time.Duration
	// LeaveTimeout bounds how long Close (or the end of Subscribe's ctx)
	// waits, after CloseTimeout's drain, for the consumer to commit its
	// last offsets and leave the group. A broker or group coordinator
	// lookup that stopped answering (paused, partitioned) would otherwise
	// hold Close for as long as Sarama retries. After it Close
	// gives up with an error wrapping [ErrCloseTimedOut]: the unfinished
	// messages stay uncommitted and are redelivered, and the group drops
	// the member after its session timeout. Close returns within
	// CloseTimeout + LeaveTimeout. Default LeaveTimeoutDefault (5 s). Must
	// not be negative.
	LeaveTimeout time.Duration
	// NackResendSleep is how long a partition waits after a nack before it
	// hands the same message out again (as watermill-kafka's
	// NackResendSleep): the partition is stalled meanwhile, since Kafka
	// keeps order per partition. The router's retries happen before a nack, so this only
	// paces redeliveries that left the router: a store that is unavailable,
	// a shutdown, a crash in the ack gap. Default NackResendSleepDefault
	// (100 ms); NackResendSleepNone for no wait; other negative values are
	// a config error.
	NackResendSleep time.Duration
	// Version is the Kafka protocol version Sarama speaks. Default
	// VersionDefault (2.8); at least VersionMin (2.1).
	Version sarama.KafkaVersion
	// ConfigureSarama, when set, is called on the Sarama config after
	// ackgap's settings, for TLS, SASL or a client id. NewSubscriber then
	// re-checks the settings ackgap relies on (auto-commit as CommitInterval
	// says, RebalanceTimeout against HoldTimeout, Offsets.Initial oldest
	// or newest); changing them is a config error. NewSubscriber calls it
	// once more for the config it runs, and then turns auto-commit off
	// (see [SubscriberConfig.SaramaConfig]). Default nil.
	ConfigureSarama func(c *sarama.Config)
	// MeterProvider makes the meter (scope [ScopeName]) on which the
	// subscriber publishes its partitions' numbers as observable
	// instruments: committed offset, watermark, in flight, buffered, lag,
	// replays skipped and regressions (the MetricPartition* constants),
	// read from Stats at each collection; Close unregisters them. Default
	// nil: otel.GetMeterProvider(), which records nothing until the
	// application installs an SDK. The console's Recorder shows them when
	// its reader is on this provider.
	MeterProvider metric.MeterProvider
}

// WithDefaults returns a copy of c with every zero field set to its
// default.
func (c SubscriberConfig) WithDefaults() SubscriberConfig {
	if c.HoldTimeout == 0 {
		c.HoldTimeout = HoldTimeoutDefault
	}
	if c.RebalanceTimeout == 0 {
		c.RebalanceTimeout = c.HoldTimeout + CommitMargin
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = SessionTimeoutDefault
	}
	if c.FetchMaxWait == 0 {
		c.FetchMaxWait = FetchMaxWaitDefault
		if c.CommitInterval > 0 {
			c.FetchMaxWait = FetchMaxWaitIntervalDefault
		}
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = CloseTimeoutDefault
	}
	if c.LeaveTimeout == 0 {
		c.LeaveTimeout = LeaveTimeoutDefault
	}
	if c.NackResendSleep == 0 {
		c.NackResendSleep = NackResendSleepDefault
	}
	if c.Version == (sarama.KafkaVersion{}) {
		c.Version = VersionDefault
	}
	return c
}

func (c SubscriberConfig) validate() error {
	var errs []error
	errs = append(errs, validateBrokers(c.Brokers))
	if c.ConsumerGroup == "" {
		errs = append(errs, errors.New("ConsumerGroup is empty: without a consumer group no offset is committed and every restart replays the topic"))
	}
	if c.HoldTimeout <= 0 || c.HoldTimeout > HoldTimeoutMax {
		errs = append(errs, fmt.Errorf("HoldTimeout is %s, must be in (0, %s] (HoldTimeoutMax, like Kafka's max.poll.interval.ms default): move longer work to the outbox", c.HoldTimeout, HoldTimeoutMax))
	}
	if c.RebalanceTimeout < c.HoldTimeout+CommitMargin {
		errs = append(errs, fmt.Errorf("RebalanceTimeout is %s, must be at least HoldTimeout (%s) + CommitMargin (%s): a rebalance waits for the in-flight message, and a member that takes longer is removed from the group", c.RebalanceTimeout, c.HoldTimeout, CommitMargin))
	}
	if c.SessionTimeout < SessionTimeoutMin || c.SessionTimeout > SessionTimeoutMax {
		errs = append(errs, fmt.Errorf("SessionTimeout is %s, must be in [%s, %s] (and within the broker's group.min/max.session.timeout.ms)", c.SessionTimeout, SessionTimeoutMin, SessionTimeoutMax))
	}
	if c.CommitInterval < 0 {
		errs = append(errs, fmt.Errorf("CommitInterval is %s, must not be negative (0 commits after each ack)", c.CommitInterval))
	}
	if c.FetchMaxWait < time.Millisecond {
		errs = append(errs, fmt.Errorf("FetchMaxWait is %s, must be at least 1ms", c.FetchMaxWait))
	}
	if c.CloseTimeout < 0 {
		errs = append(errs, fmt.Errorf("CloseTimeout is %s, must not be negative", c.CloseTimeout))
	}
	if c.LeaveTimeout < 0 {
		errs = append(errs, fmt.Errorf("LeaveTimeout is %s, must not be negative", c.LeaveTimeout))
	}
	if c.NackResendSleep < 0 && c.NackResendSleep != NackResendSleepNone {
		errs = append(errs, fmt.Errorf("NackResendSleep is %s, must not be negative but for NackResendSleepNone", c.NackResendSleep))
	}
	errs = append(errs, validateVersion(c.Version))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// SaramaConfig returns the Sarama consumer config NewSubscriber uses for c
// (after WithDefaults and ConfigureSarama). Besides the fields of c, it
// sets Consumer.Offsets.Initial to OffsetOldest (a new group starts at the
// beginning of the retained log; Sarama's default, newest, skips what was
// published before the group first joined), Consumer.Return.Errors (commit
// and fetch errors reach the logger) and ClientID.
//
// Consumer.Offsets.AutoCommit.Enable says whether CommitInterval is set
// (with AutoCommit.Interval CommitInterval), and ConfigureSarama must
// leave it so; but NewSubscriber runs Sarama with auto-commit off whatever
// it says: the subscriber sends every OffsetCommit itself (periodic ones
// every CommitInterval), so that it sees each commit's answer and can
// report it (ackgap.Delivery).
//
// With OffsetOldest, a group whose committed offsets expired (broker
// offsets.retention.minutes, 7 days by default, counted from when the group
// became empty) also restarts at the oldest retained record: keep inbox
// rows at least as long as the topic's retention (docs/design.md invariant 8).
func (c SubscriberConfig) SaramaConfig() *sarama.Config {
	c = c.WithDefaults()
	sc := kafka.DefaultSaramaSubscriberConfig()
	sc.ClientID = ClientID
	sc.Version = c.Version
	sc.Consumer.Return.Errors = true
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.Offsets.AutoCommit.Enable = c.CommitInterval > 0
	if c.CommitInterval > 0 {
		sc.Consumer.Offsets.AutoCommit.Interval = c.CommitInterval
	}
	sc.Consumer.MaxWaitTime = c.FetchMaxWait
	sc.Consumer.Group.Session.Timeout = c.SessionTimeout
	sc.Consumer.Group.Heartbeat.Interval = c.SessionTimeout / 3
	sc.Consumer.Group.Rebalance.Timeout = c.RebalanceTimeout
	if c.ConfigureSarama != nil {
		c.ConfigureSarama(sc)
	}
	return sc
}

// checkSarama re-checks what ackgap relies on in sc, built by SaramaConfig
// for c (ConfigureSarama may have changed it).
func (c SubscriberConfig) checkSarama(sc *sarama.Config) error {
	var errs []error
	if sc.Consumer.Offsets.AutoCommit.Enable != (c.CommitInterval > 0) {
		errs = append(errs, fmt.Errorf("ConfigureSarama set Consumer.Offsets.AutoCommit.Enable to %t: set CommitInterval instead (0 commits after each ack)", sc.Consumer.Offsets.AutoCommit.Enable))
	}
	if sc.Consumer.Group.Rebalance.Timeout < c.HoldTimeout+CommitMargin {
		errs = append(errs, fmt.Errorf("ConfigureSarama set Consumer.Group.Rebalance.Timeout to %s, below HoldTimeout (%s) + CommitMargin (%s)", sc.Consumer.Group.Rebalance.Timeout, c.HoldTimeout, CommitMargin))
	}
	if i := sc.Consumer.Offsets.Initial; i != sarama.OffsetOldest && i != sarama.OffsetNewest {
		errs = append(errs, fmt.Errorf("ConfigureSarama set Consumer.Offsets.Initial to %d: want sarama.OffsetOldest or sarama.OffsetNewest", i))
	}
	if !sc.Version.IsAtLeast(VersionMin) {
		errs = append(errs, fmt.Errorf("ConfigureSarama set Version to %s, below %s", sc.Version, VersionMin))
	}
	if err := sc.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("sarama: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}
