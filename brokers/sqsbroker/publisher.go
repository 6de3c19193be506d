package sqsbroker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsqs "github.com/ThreeDotsLabs/watermill-aws/sqs"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// PublisherConfig configures [NewPublisher] and [NewDeadLetterPublisher].
// Fields left zero take the default named in their doc.
type PublisherConfig struct {
	// AWSConfig is the AWS configuration, as in SubscriberConfig. Default
	// zero: then OptFns must set the region and credentials.
	AWSConfig aws.Config
	// OptFns adjust the SQS client's options (endpoint, region,
	// credentials). Default none.
	OptFns []func(*sqs.Options)
	// Marshaler turns a Watermill message into an SQS message. Default
	// [Marshaler]: every metadata key (event_id, traceparent) becomes a
	// message attribute.
	Marshaler wsqs.Marshaler
	// RequestTimeout bounds NewDeadLetterPublisher's queue lookup.
	// Default RequestTimeoutDefault (10 s).
	RequestTimeout time.Duration
}

// WithDefaults returns a copy of c with every zero field set to its
// default.
func (c PublisherConfig) WithDefaults() PublisherConfig {
	if c.Marshaler == nil {
		c.Marshaler = Marshaler{}
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = RequestTimeoutDefault
	}
	return c
}

func (c PublisherConfig) validate() error {
	errs := []error{validateClient(c.AWSConfig, c.OptFns)}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("RequestTimeout is %s, must be positive", c.RequestTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// NewPublisher returns watermill-aws's SQS publisher set up for ackgap:
// the [Marshaler] by default, so the event id and trace context travel as
// message attributes, and no queue created on the fly (a queue made by a
// publisher would get SQS's defaults: a 30 s visibility timeout and no
// redrive policy). The topic is the queue name; Publish fails for a queue
// that does not exist. Publish sends one SendMessage per message, in
// order, and returns at the first error. logger nil means
// watermill.NopLogger. Errors wrap "invalid config".
//
// To a FIFO queue (name ending in ".fifo") each message is sent with
// MessageGroupId set to its metadata [MetadataPartitionKey] and
// MessageDeduplicationId set to its event id (ackgap.MetadataEventIDKey;
// outbox.Publish sets it to the row's idempotency key), each used as is
// when SQS accepts it (1 to 128 ASCII letters, digits, punctuation) and
// as its SHA-256 in hex otherwise. SQS then drops a second send of one
// event within its 5-minute deduplication window; a copy sent later is
// skipped by the consumer's inbox. A message without a group key is not
// sent: Publish returns an ackgap.Permanent error wrapping
// [ErrMissingGroupKey] (a dead-lettered copy, metadata
// ackgap.MetadataDeadLetterReason set, falls back to its event id as its
// group).
func NewPublisher(cfg *PublisherConfig, logger watermill.LoggerAdapter) (*wsqs.Publisher, error) {
	c := PublisherConfig{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return newPublisher(c, nil, logger)
}

func newPublisher(c PublisherConfig, resolver wsqs.QueueUrlResolver, logger watermill.LoggerAdapter) (*wsqs.Publisher, error) {
	if logger == nil {
		logger = watermill.NopLogger{}
	}
	pub, err := wsqs.NewPublisher(wsqs.PublisherConfig{
		AWSConfig:                   c.AWSConfig,
		OptFns:                      withBufferedBodies(c.OptFns),
		DoNotCreateQueueIfNotExists: true,
		QueueUrlResolver:            resolver,
		Marshaler:                   c.Marshaler,
		GenerateSendMessageInput:    sendMessageInput,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("sqsbroker: %w", err)
	}
	return pub, nil
}

// NewDeadLetterPublisher returns a message.Publisher that sends every
// message to the dead-letter queue named queue (a name or URL), whatever
// topic it is given, for use as router.Config.DeadLetter: the router
// publishes to Config.DeadLetterTopic ("ackgap.dead_letter" by default),
// which is not even a valid SQS queue name (names allow only letters,
// digits, '-' and '_'). It checks at construction, with ctx, that the
// queue exists. The message keeps its event id and metadata, including
// the router's dead-letter reason (ackgap.MetadataDeadLetterReason) and
// Watermill's poison keys, as message attributes; the receiving side's
// delivery keys (receipt handle and so on) are not copied.
//
// This is the path for permanent failures, which the router routes at
// once. Repeated transient failures are left to the source queue's redrive
// policy: SQS moves a message received more than maxReceiveCount times to
// the queue's dead-letter queue by itself.
func NewDeadLetterPublisher(ctx context.Context, cfg *PublisherConfig, queue string, logger watermill.LoggerAdapter) (message.Publisher, error) {
	c := PublisherConfig{}
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if queue == "" {
		return nil, errors.New("invalid config: dead-letter queue name is empty")
	}
	client := sqs.NewFromConfig(c.AWSConfig, withBufferedBodies(c.OptFns)...)
	url := queue
	if !isQueueURL(queue) {
		rctx, cancel := context.WithTimeout(ctx, c.RequestTimeout)
		defer cancel()
		out, err := client.GetQueueUrl(rctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
		if err != nil {
			return nil, fmt.Errorf("sqsbroker: dead-letter queue %q: %w", queue, err)
		}
		url = aws.ToString(out.QueueUrl)
	}
	return newPublisher(c, fixedQueue{url: wsqs.QueueURL(url), name: wsqs.QueueName(queueName(url))}, logger)
}

// fixedQueue resolves every topic to one queue.
type fixedQueue struct {
	url  wsqs.QueueURL
	name wsqs.QueueName
}

func (f fixedQueue) ResolveQueueUrl(context.Context, wsqs.ResolveQueueUrlParams) (wsqs.QueueUrlResolverResult, error) {
	url, exists := f.url, true
	return wsqs.QueueUrlResolverResult{QueueName: f.name, QueueURL: &url, Exists: &exists}, nil
}

var (
	_ wsqs.QueueUrlResolver = fixedQueue{}
	_ message.Publisher     = (*wsqs.Publisher)(nil)
)
