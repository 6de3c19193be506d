package sqsbroker

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	wsqs "github.com/ThreeDotsLabs/watermill-aws/sqs"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Defaults and limits of [SubscriberConfig].
const (
	// VisibilityFactorDefault is the default VisibilityFactor: the queue's
	// visibility timeout must be at least 6 × AttemptTimeout. The rule is
	// AWS's guidance for Lambda SQS event sources ("set the source queue's
	// visibility timeout to at least six times the timeout that you
	// configure on your function", Lambda developer guide, "Using Lambda
	// with Amazon SQS"). Here it also covers package router's default
	// three attempts in place (3 × AttemptTimeout plus backoff) with room
	// for the delete, should the heartbeat stall.
	VisibilityFactorDefault = 6.0
	// AttemptTimeoutDefault is the default AttemptTimeout, 30 s: package
	// router's default per-attempt timeout (router.HandlerTimeoutDefault).
	AttemptTimeoutDefault = 30 * time.Second
	// MaxNumberOfMessagesDefault is the default MaxNumberOfMessages, SQS's
	// maximum (10): one ReceiveMessage request per ten messages instead of
	// per message (SQS bills per request), and the heartbeat keeps the
	// messages that wait their turn in the batch leased. With the heartbeat
	// disabled the default is 1, because a message waiting its turn
	// would hold its lease for the time of every message before it.
	MaxNumberOfMessagesDefault = 10
	// MaxNumberOfMessagesMax is SQS's limit on MaxNumberOfMessages
	// (ReceiveMessage API reference: "Valid values: 1 to 10").
	MaxNumberOfMessagesMax = 10
	// WaitTimeSecondsDefault is the default WaitTimeSeconds, SQS's maximum
	// long poll (20 s). Long polling returns as soon as a message arrives,
	// so it adds no latency; it saves empty responses, and unlike short
	// polling it queries every SQS server rather than a sample, so it gives
	// no false empty responses (SQS developer guide, "Amazon SQS short and
	// long polling"). Close waits for a poll in flight, up to
	// CloseTimeout, and releases what it brings: a poll cancelled by the
	// client may still take messages that nobody then reads.
	WaitTimeSecondsDefault = 20
	// WaitTimeSecondsMax is SQS's limit on WaitTimeSeconds.
	WaitTimeSecondsMax = 20
	// NackDelayDefault is the default NackDelay: a nacked message is
	// visible again after 1 s instead of after the whole visibility
	// timeout.
	NackDelayDefault = time.Second
	// VisibilityTimeoutMax is SQS's longest visibility timeout (12 h); it
	// also caps a message's total time in flight, extensions included
	// (SQS developer guide, "Amazon SQS visibility timeout").
	VisibilityTimeoutMax = 12 * time.Hour
	// HeartbeatDivisor sets the default heartbeat interval to
	// VisibilityTimeout / 3: a lease survives two lost extensions in a
	// row. The explicit HeartbeatInterval must be at most half the
	// visibility timeout.
	HeartbeatDivisor = 3
	// CloseTimeoutDefault is the default CloseTimeout: below package
	// router's CloseTimeoutDefault (30 s), so the router's Close sees the
	// subscriber finish.
	CloseTimeoutDefault = 20 * time.Second
	// RequestTimeoutDefault bounds each SQS call other than the long poll
	// (delete, change visibility, attributes).
	RequestTimeoutDefault = 10 * time.Second
	// ReconnectRetrySleepDefault is the pause after a failed ReceiveMessage,
	// watermill-aws's default.
	ReconnectRetrySleepDefault = time.Second
	// WorkersDefault is the default Workers: receive loops per Subscribe
	// call, each handing out one message at a time. Measured through the
	// router and a SQLite inbox against fauxqs (TestThroughput): see
	// doc.go.
	WorkersDefault = 4
)

// SubscriberConfig configures [NewSubscriber]. Fields left zero take the
// default named in their doc. The SQS client is built from AWSConfig and
// OptFns the way watermill-aws builds it (sqs.NewFromConfig).
type SubscriberConfig struct {
	// AWSConfig is the AWS configuration (region, credentials, HTTP
	// client), usually from config.LoadDefaultConfig. Default zero: then
	// OptFns must set the region and credentials.
	AWSConfig aws.Config
	// OptFns adjust the SQS client's options: a local endpoint
	// (o.BaseEndpoint), a region, static credentials for tests. Default
	// none.
	OptFns []func(*sqs.Options)
	// Queue is the queue to read: its name (resolved with GetQueueUrl) or
	// its URL. Required. Subscribe accepts this queue only, by name or
	// URL: its lease settings are checked against this queue at
	// construction.
	Queue string
	// AttemptTimeout is the longest one attempt of the handler may take:
	// set it to package router's Config.HandlerTimeout. The queue's visibility
	// timeout must be at least VisibilityFactor × AttemptTimeout, else
	// NewSubscriber fails. Default AttemptTimeoutDefault (30 s); at most
	// VisibilityTimeoutMax (12 h).
	AttemptTimeout time.Duration
	// VisibilityFactor is the required ratio of the queue's visibility
	// timeout to AttemptTimeout. Raise it to at least MaxAttempts + 1 when
	// the router retries more than 3 times in place. Values below 1 mean
	// the lease lapses before the handler's own deadline: only tests that
	// show what then happens should use them. Default
	// VisibilityFactorDefault (6); must be positive.
	VisibilityFactor float64
	// MaxNumberOfMessages is ReceiveMessage's batch size. Messages of a
	// batch are handed out one at a time per worker; the others wait their
	// turn, leased by the heartbeat. With DisableHeartbeat the check above
	// becomes visibility timeout >= VisibilityFactor × AttemptTimeout ×
	// MaxNumberOfMessages. Default MaxNumberOfMessagesDefault (10), or 1
	// with DisableHeartbeat; within [1, 10].
	MaxNumberOfMessages int
	// WaitTimeSeconds is ReceiveMessage's long-poll time, in seconds.
	// Default WaitTimeSecondsDefault (20); within [1, 20] (short polling,
	// 0, is not offered: see WaitTimeSecondsDefault).
	WaitTimeSeconds int
	// DisableHeartbeat turns the lease heartbeat off. With it on (the
	// default), every message received and not yet acked or nacked, handed
	// out or waiting its turn, has its visibility extended by the queue's
	// visibility timeout every HeartbeatInterval (ChangeMessageVisibility,
	// or ChangeMessageVisibilityBatch when several are due), so a slow
	// handler does not see its message delivered again (case S11). Default
	// false: the heartbeat is on.
	DisableHeartbeat bool
	// HeartbeatInterval is the time between two extensions of one lease.
	// Default the queue's visibility timeout / HeartbeatDivisor (3); at
	// most half the visibility timeout.
	HeartbeatInterval time.Duration
	// NackDelay is how long a nacked message stays invisible before SQS
	// delivers it again (ChangeMessageVisibility on nack), instead of the
	// rest of the visibility timeout. SQS counts whole seconds: it is
	// rounded up. Repeated failures are bounded by the queue's redrive
	// policy (maxReceiveCount). Default NackDelayDefault (1 s); within
	// [1 s, 12 h].
	NackDelay time.Duration
	// Workers is the number of receive loops per Subscribe call; each
	// hands out one message at a time, so it is also the number of
	// messages in the handler at once. For a [BatchConsumer] it is the
	// number of batches in their transactions at once (fed by Pollers).
	// Default WorkersDefault (4); at least 1.
	Workers int
	// Pollers is, for a [BatchConsumer], the number of ReceiveMessage
	// calls it keeps in flight: each poller hands its batch to a free
	// worker and receives the next, so a worker that committed finds a
	// batch waiting instead of waiting for a receive. Each holds at most
	// one received batch waiting for a worker (its leases kept by the
	// heartbeat), so at most (Pollers + Workers) × MaxNumberOfMessages
	// messages are held at once. A [Subscriber] does not use it: its
	// Workers receive. Default Workers; at least 1.
	Pollers int
	// CloseTimeout bounds how long Close (or the end of Subscribe's ctx)
	// waits for messages already handed out to be acked or nacked; their
	// leases are kept alive meanwhile. After it, their contexts are
	// cancelled, their heartbeat stops, and SQS delivers them again once
	// their visibility lapses. Messages received but not handed out are
	// released at once (visibility 0). It also bounds the wait for the
	// receives in flight at the stop, whose messages are released too: a
	// receive still unanswered after it is cancelled, and what SQS may
	// still hand to it stays invisible for the visibility timeout (so
	// above WaitTimeSeconds, every receive is waited for). An idle
	// consumer's Close therefore takes up to the rest of its long polls.
	// Default CloseTimeoutDefault (20 s); must not be negative.
	CloseTimeout time.Duration
	// RequestTimeout bounds each SQS call other than the long poll.
	// Default RequestTimeoutDefault (10 s); must be positive.
	RequestTimeout time.Duration
	// ReconnectRetrySleep is the pause after a failed ReceiveMessage.
	// Default ReconnectRetrySleepDefault (1 s); must be positive.
	ReconnectRetrySleep time.Duration
	// Unmarshaler turns an SQS message into a Watermill message. Default
	// [Marshaler]: all message attributes become metadata, plus the SQS
	// transport metadata (MetadataReceiptHandle, MetadataReceiveCount,
	// MetadataMessageID). The subscriber keeps the receipt handle itself,
	// so a custom Unmarshaler cannot break acks or leases.
	Unmarshaler wsqs.Unmarshaler
	// AckObserver, when set, receives the ackgap.Delivery of each message
	// once the subscriber settled it (deleted, nacked, released or failed):
	// see [AckObserverFunc]. Deletes and nacks are answered in the
	// background (coalesced into batch requests), so it is called from
	// the goroutine that sent the request, concurrently with other calls
	// and possibly after later messages were handed out; releases and
	// abandoned messages are reported from the worker. It must be safe for
	// concurrent use and must not block. Default nil.
	AckObserver AckObserverFunc
}

// WithDefaults returns a copy of c with every zero field set to its
// default. HeartbeatInterval is left zero: its default depends on the
// queue and is set by NewSubscriber.
func (c SubscriberConfig) WithDefaults() SubscriberConfig {
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = AttemptTimeoutDefault
	}
	if c.VisibilityFactor == 0 {
		c.VisibilityFactor = VisibilityFactorDefault
	}
	if c.MaxNumberOfMessages == 0 {
		c.MaxNumberOfMessages = MaxNumberOfMessagesDefault
		if c.DisableHeartbeat {
			c.MaxNumberOfMessages = 1
		}
	}
	if c.WaitTimeSeconds == 0 {
		c.WaitTimeSeconds = WaitTimeSecondsDefault
	}
	if c.NackDelay == 0 {
		c.NackDelay = NackDelayDefault
	}
	if c.Workers == 0 {
		c.Workers = WorkersDefault
	}
	if c.Pollers == 0 {
		c.Pollers = max(c.Workers, 1)
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = CloseTimeoutDefault
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = RequestTimeoutDefault
	}
	if c.ReconnectRetrySleep == 0 {
		c.ReconnectRetrySleep = ReconnectRetrySleepDefault
	}
	if c.Unmarshaler == nil {
		c.Unmarshaler = Marshaler{}
	}
	return c
}

// validate checks what can be checked without calling SQS, every problem
// at once.
func (c SubscriberConfig) validate() error {
	var errs []error
	if c.Queue == "" {
		errs = append(errs, errors.New("Queue is empty: name the queue (or give its URL) to read"))
	}
	errs = append(errs, validateClient(c.AWSConfig, c.OptFns))
	if c.AttemptTimeout <= 0 || c.AttemptTimeout > VisibilityTimeoutMax {
		errs = append(errs, fmt.Errorf("AttemptTimeout is %s, must be in (0, %s]", c.AttemptTimeout, VisibilityTimeoutMax))
	}
	if !(c.VisibilityFactor > 0) || math.IsInf(c.VisibilityFactor, 0) {
		errs = append(errs, fmt.Errorf("VisibilityFactor is %g, must be positive", c.VisibilityFactor))
	}
	if c.MaxNumberOfMessages < 1 || c.MaxNumberOfMessages > MaxNumberOfMessagesMax {
		errs = append(errs, fmt.Errorf("MaxNumberOfMessages is %d, must be in [1, %d] (SQS ReceiveMessage limit)", c.MaxNumberOfMessages, MaxNumberOfMessagesMax))
	}
	if c.WaitTimeSeconds < 1 || c.WaitTimeSeconds > WaitTimeSecondsMax {
		errs = append(errs, fmt.Errorf("WaitTimeSeconds is %d, must be in [1, %d] (long polling; SQS's limit is %d)", c.WaitTimeSeconds, WaitTimeSecondsMax, WaitTimeSecondsMax))
	}
	if c.HeartbeatInterval < 0 {
		errs = append(errs, fmt.Errorf("HeartbeatInterval is %s, must not be negative", c.HeartbeatInterval))
	}
	if c.NackDelay < time.Second || c.NackDelay > VisibilityTimeoutMax {
		errs = append(errs, fmt.Errorf("NackDelay is %s, must be in [1s, %s] (SQS visibility is set in whole seconds)", c.NackDelay, VisibilityTimeoutMax))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("Workers is %d, must be at least 1", c.Workers))
	}
	if c.Pollers < 1 {
		errs = append(errs, fmt.Errorf("Pollers is %d, must be at least 1", c.Pollers))
	}
	if c.CloseTimeout < 0 {
		errs = append(errs, fmt.Errorf("CloseTimeout is %s, must not be negative", c.CloseTimeout))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("RequestTimeout is %s, must be positive", c.RequestTimeout))
	}
	if c.ReconnectRetrySleep <= 0 {
		errs = append(errs, fmt.Errorf("ReconnectRetrySleep is %s, must be positive", c.ReconnectRetrySleep))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// requiredVisibility is the shortest visibility timeout c accepts.
func (c SubscriberConfig) requiredVisibility() time.Duration {
	need := c.VisibilityFactor * float64(c.AttemptTimeout)
	if c.DisableHeartbeat {
		need *= float64(c.MaxNumberOfMessages)
	}
	return time.Duration(math.Ceil(need))
}

// validateQueue checks c against the queue's attributes, every problem at
// once.
func (c SubscriberConfig) validateQueue(q QueueInfo) error {
	var errs []error
	if need := c.requiredVisibility(); q.VisibilityTimeout < need {
		rule := fmt.Sprintf("VisibilityFactor %g × AttemptTimeout %s", c.VisibilityFactor, c.AttemptTimeout)
		if c.DisableHeartbeat {
			rule += fmt.Sprintf(" × MaxNumberOfMessages %d (heartbeat disabled: the last message of a batch waits for the others)", c.MaxNumberOfMessages)
		}
		errs = append(errs, fmt.Errorf("queue %s has VisibilityTimeout %s, less than %s = %s; raise the queue's VisibilityTimeout or lower AttemptTimeout",
			q.Name, q.VisibilityTimeout, rule, need))
	}
	if c.HeartbeatInterval > 0 && c.HeartbeatInterval > q.VisibilityTimeout/2 {
		errs = append(errs, fmt.Errorf("HeartbeatInterval is %s, more than half of queue %s's VisibilityTimeout %s", c.HeartbeatInterval, q.Name, q.VisibilityTimeout))
	}
	if !c.DisableHeartbeat && q.VisibilityTimeout < time.Second {
		errs = append(errs, fmt.Errorf("queue %s has VisibilityTimeout %s: a lease needs at least 1s to be extended", q.Name, q.VisibilityTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// validateClient checks that the SQS client will have a region and
// credentials once OptFns ran.
func validateClient(cfg aws.Config, optFns []func(*sqs.Options)) error {
	o := sqs.NewFromConfig(cfg, optFns...).Options()
	var errs []error
	if o.Region == "" {
		errs = append(errs, errors.New("no AWS region: set AWSConfig.Region or o.Region in OptFns"))
	}
	if o.Credentials == nil {
		errs = append(errs, errors.New("no AWS credentials: set AWSConfig.Credentials or o.Credentials in OptFns"))
	}
	return errors.Join(errs...)
}

// QueueInfo is what NewSubscriber read about the queue with
// GetQueueAttributes.
type QueueInfo struct {
	// URL and Name of the queue.
	URL, Name string
	// VisibilityTimeout is the queue's VisibilityTimeout attribute; the
	// subscriber asks for exactly this on every ReceiveMessage, so its
	// lease accounting does not depend on later changes to the queue.
	VisibilityTimeout time.Duration
	// MessageRetention is the queue's MessageRetentionPeriod: how long SQS
	// may still deliver a message. Inbox rows must be kept at least this
	// long (docs/design.md invariant 8): it is a lower bound for
	// retention.Config.RedeliveryWindow (add the dead-letter queue's
	// retention if messages are redriven back from it).
	MessageRetention time.Duration
	// MaxReceiveCount and DeadLetterTargetARN come from the queue's
	// RedrivePolicy; both are zero without one. A message received more
	// than MaxReceiveCount times is moved to the dead-letter queue by SQS.
	MaxReceiveCount     int
	DeadLetterTargetARN string
	// FIFO is true for a FIFO queue.
	FIFO bool
}

func parseQueueInfo(url string, attrs map[string]string) (QueueInfo, error) {
	q := QueueInfo{URL: url, Name: queueName(url), FIFO: attrs["FifoQueue"] == "true"}
	secs := func(key string) (time.Duration, error) {
		v, ok := attrs[key]
		if !ok {
			return 0, fmt.Errorf("queue %s: attribute %s missing", q.Name, key)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("queue %s: attribute %s=%q: %w", q.Name, key, v, err)
		}
		return time.Duration(n) * time.Second, nil
	}
	var err error
	if q.VisibilityTimeout, err = secs("VisibilityTimeout"); err != nil {
		return q, err
	}
	if _, ok := attrs["MessageRetentionPeriod"]; ok {
		if q.MessageRetention, err = secs("MessageRetentionPeriod"); err != nil {
			return q, err
		}
	}
	if rp := attrs["RedrivePolicy"]; rp != "" {
		var p struct {
			DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
			MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(rp), &p); err != nil {
			return q, fmt.Errorf("queue %s: RedrivePolicy %q: %w", q.Name, rp, err)
		}
		q.DeadLetterTargetARN = p.DeadLetterTargetArn
		// maxReceiveCount is a number or a string holding one.
		n, err := strconv.Atoi(strings.Trim(string(p.MaxReceiveCount), `"`))
		if err != nil {
			return q, fmt.Errorf("queue %s: RedrivePolicy maxReceiveCount %s: %w", q.Name, p.MaxReceiveCount, err)
		}
		q.MaxReceiveCount = n
	}
	return q, nil
}

// queueName returns the last path element of a queue URL.
func queueName(url string) string {
	if i := strings.LastIndexByte(url, '/'); i >= 0 {
		return url[i+1:]
	}
	return url
}

// isQueueURL reports whether s is a queue URL rather than a name (queue
// names hold only letters, digits, '-' and '_', and a ".fifo" suffix).
func isQueueURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// seconds rounds d up to whole seconds, as SQS counts visibility.
func seconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}
