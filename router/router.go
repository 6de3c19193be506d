package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	wmw "github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/deadletter"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/stores"
)

// Defaults of [Config].
const (
	// HandlerTimeoutDefault bounds one attempt of a handler.
	HandlerTimeoutDefault = 30 * time.Second
	// HandlerTimeoutMax is the longest HandlerTimeout accepted: SQS's
	// longest visibility timeout is 12 h, and a handler must finish well
	// inside its lease.
	HandlerTimeoutMax = 12 * time.Hour
	// MaxAttemptsDefault is how many times a failing message is tried in
	// place before it is dead-lettered.
	MaxAttemptsDefault = 3
	// RetryInitialIntervalDefault is the first backoff between attempts.
	RetryInitialIntervalDefault = 100 * time.Millisecond
	// RetryMaxIntervalDefault caps the backoff between attempts.
	RetryMaxIntervalDefault = time.Second
	// DeadLetterTopicDefault receives messages that cannot be processed.
	DeadLetterTopicDefault = "ackgap.dead_letter"
	// CloseTimeoutDefault bounds how long Close waits for in-flight
	// handlers to finish and commit.
	CloseTimeoutDefault = 30 * time.Second
)

// Config configures a [Router]. Fields left zero take the default named in
// their doc.
type Config struct {
	// DeadLetter publishes messages that cannot be processed (no event id,
	// a refused transition, a payload that does not parse, attempts
	// exhausted). Required: every message needs an outcome, and silently
	// dropping one is not an option. Each copy carries its metadata plus
	// ackgap.MetadataDeadLetterReason, Watermill's poison-queue keys
	// (reason_poisoned, the final error's text; topic_poisoned;
	// handler_poisoned; subscriber_poisoned) and, for a Kafka record, its
	// source coordinates (ackgap.MetadataSourceTopic,
	// MetadataSourcePartition, MetadataSourceOffset: a dead-letter reader
	// dedupes on them). A publish that fails with an error wrapping
	// ackgap.ErrUnencodable (the broker cannot carry the message as it is)
	// is followed by a sanitised copy: the original payload, the event id,
	// reason, trace context and source coordinates,
	// MetadataDeadLetterSanitized, and all the original metadata in
	// MetadataOriginalMetadata. If that fails too it is logged as an error
	// and the message is nacked, left to the broker's redrive policy; any
	// other publish error nacks it as well.
	DeadLetter message.Publisher
	// DeadLetterTopic is where DeadLetter publishes. Default
	// DeadLetterTopicDefault ("ackgap.dead_letter").
	DeadLetterTopic string
	// InboxConfig configures the inbox middleware of every handler, whole
	// (event id extraction and limit, PayloadMismatch, Observer,
	// RollbackTimeout, Now), with the defaults of middleware.InboxConfig.
	// Its Consumer must be left empty: AddHandler, Middleware and
	// Middlewares name the consumer per handler.
	middleware.InboxConfig
	// HandlerTimeout bounds one attempt of a handler. Default
	// HandlerTimeoutDefault (30 s), at most HandlerTimeoutMax (12 h).
	HandlerTimeout time.Duration
	// MaxAttempts is the number of attempts in place, the first included.
	// Default MaxAttemptsDefault (3).
	MaxAttempts int
	// RetryInitialInterval and RetryMaxInterval shape the backoff between
	// attempts. Defaults 100 ms and 1 s.
	RetryInitialInterval, RetryMaxInterval time.Duration
	// CloseTimeout bounds Close. Default CloseTimeoutDefault (30 s).
	CloseTimeout time.Duration
	// Middlewares run outermost, around everything else: the tracing hook
	// point. Default none.
	Middlewares []message.HandlerMiddleware
	// Logger receives Watermill's logs and the chain's: every dead letter
	// at error, every retry, nack for shutdown or for an unavailable store
	// and unconfirmed ack at warn (see LogDeadLettered and the other Log
	// constants; a [WarnLogger] gets real warn levels). Watermill's own
	// "Handler returned error" for a nack is lowered to warn too (New
	// only; a router of your own behind [Middlewares] logs it at error).
	// No payloads are logged. Default SlogLogger(nil): log/slog's default logger. Pass
	// watermill.NopLogger{} for silence.
	Logger watermill.LoggerAdapter
}

// WithDefaults returns a copy of c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.InboxConfig = c.InboxConfig.WithDefaults()
	if c.DeadLetterTopic == "" {
		c.DeadLetterTopic = DeadLetterTopicDefault
	}
	if c.HandlerTimeout == 0 {
		c.HandlerTimeout = HandlerTimeoutDefault
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = MaxAttemptsDefault
	}
	if c.RetryInitialInterval == 0 {
		c.RetryInitialInterval = RetryInitialIntervalDefault
	}
	if c.RetryMaxInterval == 0 {
		c.RetryMaxInterval = RetryMaxIntervalDefault
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = CloseTimeoutDefault
	}
	if c.Logger == nil {
		c.Logger = SlogLogger(nil)
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.DeadLetter == nil {
		errs = append(errs, errors.New("DeadLetter is nil: messages that cannot be processed need a dead-letter publisher"))
	}
	if c.HandlerTimeout < 0 || c.HandlerTimeout > HandlerTimeoutMax {
		errs = append(errs, fmt.Errorf("HandlerTimeout is %s, must be in (0, %s]", c.HandlerTimeout, HandlerTimeoutMax))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("MaxAttempts is %d, must be at least 1", c.MaxAttempts))
	}
	if c.RetryInitialInterval < 0 || c.RetryMaxInterval < c.RetryInitialInterval {
		errs = append(errs, fmt.Errorf("RetryInitialInterval %s and RetryMaxInterval %s: want 0 <= initial <= max", c.RetryInitialInterval, c.RetryMaxInterval))
	}
	if c.CloseTimeout < 0 {
		errs = append(errs, fmt.Errorf("CloseTimeout is %s, must not be negative", c.CloseTimeout))
	}
	if c.Consumer != "" {
		errs = append(errs, fmt.Errorf("InboxConfig.Consumer is %q: leave it empty, the consumer is named per handler", c.Consumer))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// HandlerFunc handles one message inside its inbox transaction. tx is the
// store's own transaction (pgx.Tx, *sql.Tx); ctx is the message context,
// which also carries tx for ackgap.ApplyTransition and ackgap.AddOutbox. Return nil to commit and ack; an error rolls back
// and nacks (retried), ackgap.Permanent rolls back and dead-letters.
// Do no network I/O here: record external effects as outbox rows.
type HandlerFunc[TTx any] func(ctx context.Context, tx TTx, msg *message.Message) error

// JSON adapts a handler that takes the payload decoded from JSON into a
// value of type T. A payload that does not decode is a permanent error
// (reason ackgap.ReasonBadPayload): the message is dead-lettered with its
// original bytes, not retried.
func JSON[TTx, T any](fn func(ctx context.Context, tx TTx, msg *message.Message, v T) error) HandlerFunc[TTx] {
	return func(ctx context.Context, tx TTx, msg *message.Message) error {
		var v T
		if err := json.Unmarshal(msg.Payload, &v); err != nil {
			return ackgap.Permanent(ackgap.ReasonBadPayload, fmt.Errorf("%w: %w", ackgap.ErrBadPayload, err))
		}
		return fn(ctx, tx, msg, v)
	}
}

// Adapt turns h into a Watermill handler for use behind the inbox
// middleware (middleware.Inbox) in a router of your own: it takes the
// transaction from the message context and calls h with it. Outside the
// inbox middleware it returns ackgap.ErrNoTransaction.
func Adapt[TTx any](h HandlerFunc[TTx]) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		tx, ok := ackgap.TxFromContext[TTx](msg.Context())
		if !ok {
			return nil, ackgap.ErrNoTransaction
		}
		return nil, h(msg.Context(), tx, msg)
	}
}

// Router is a Watermill router whose handlers run behind the inbox.
// Run and Close may be called from different goroutines.
type Router[TTx any] struct {
	wr       *message.Router
	store    stores.Store[TTx]
	cfg      Config
	handlers map[string]bool // consumer/topic pairs added
}

// New returns a Router on store; cfg is required because DeadLetter is.
// It returns an error wrapping "invalid config" naming every bad field.
func New[TTx any](store stores.Store[TTx], cfg *Config) (*Router[TTx], error) {
	if cfg == nil {
		return nil, errors.New("invalid config: Config is nil: DeadLetter is required")
	}
	if store == nil {
		return nil, errors.New("invalid config: store is nil")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	wr, err := message.NewRouter(message.RouterConfig{CloseTimeout: c.CloseTimeout}, routerLogger{c.Logger})
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return &Router[TTx]{wr: wr, store: store, cfg: c, handlers: map[string]bool{}}, nil
}

// AddHandler subscribes h to topic on sub as consumer. The consumer name
// scopes inbox rows: one consumer may subscribe several topics (or
// partitions of one stream), and all of them share its inbox. The
// Watermill handler is named "<consumer>/<topic>". Call it before Run. It
// returns an error wrapping "invalid config" for a bad consumer name or a
// consumer/topic pair added twice.
func (r *Router[TTx]) AddHandler(consumer, topic string, sub message.Subscriber, h HandlerFunc[TTx]) error {
	if topic == "" || sub == nil || h == nil {
		return errors.New("invalid config: AddHandler needs a topic, a subscriber and a handler")
	}
	name := consumer + "/" + topic
	if r.handlers[name] {
		return fmt.Errorf("invalid config: consumer %q already subscribes topic %q", consumer, topic)
	}
	chain, err := r.Middleware(consumer)
	if err != nil {
		return err
	}
	r.handlers[name] = true
	r.wr.AddConsumerHandler(name, topic, sub, ConsumerHandler(h)).AddMiddleware(chain...)
	return nil
}

// Middleware returns the router's chain for consumer, outermost first:
// the same as [Middlewares] with the router's store and config.
func (r *Router[TTx]) Middleware(consumer string) ([]message.HandlerMiddleware, error) {
	return buildChain(r.store, consumer, r.cfg)
}

// Chain returns h behind the router's chain for consumer, as one
// Watermill handler: the chain of [Router.Middleware] (outermost first)
// around [Adapt](h), exactly what AddHandler runs for a subscriber. It is
// for runtimes that call a handler per message without a subscriber, such
// as sqsbroker.LambdaHandler. Only the router's configuration is used; it
// need not run. It returns an error wrapping "invalid config" for a nil h
// or a bad consumer name.
func (r *Router[TTx]) Chain(consumer string, h HandlerFunc[TTx]) (message.HandlerFunc, error) {
	if h == nil {
		return nil, errors.New("invalid config: Chain needs a handler")
	}
	chain, err := r.Middleware(consumer)
	if err != nil {
		return nil, err
	}
	final := Adapt(h)
	for i := len(chain) - 1; i >= 0; i-- {
		final = chain[i](final)
	}
	return final, nil
}

// MaxHoldTime returns the longest a router with cfg (nil means its
// defaults) holds one message: HandlerTimeout for each of MaxAttempts
// attempts plus the longest backoff between them (exponential, factor 2,
// capped at RetryMaxInterval, with 20% jitter). A broker whose lease must
// cover every attempt takes it: kafkabroker.SubscriberConfig.HoldTimeout.
func MaxHoldTime(cfg *Config) time.Duration {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	total := time.Duration(c.MaxAttempts) * c.HandlerTimeout
	interval := c.RetryInitialInterval
	for i := 1; i < c.MaxAttempts; i++ {
		total += interval + interval/5
		interval = min(2*interval, c.RetryMaxInterval)
	}
	return total
}

// Middlewares returns the whole safe chain for consumer, outermost first
// (see the package doc), for users who keep their own Watermill router:
//
//	chain, err := router.Middlewares[pgx.Tx](store, "billing", &router.Config{DeadLetter: pub})
//	wr.AddConsumerHandler("billing", "orders.placed", sub, router.ConsumerHandler(h)).AddMiddleware(chain...)
//
// It returns an error wrapping "invalid config" naming every bad field.
func Middlewares[TTx any](store stores.Store[TTx], consumer string, cfg *Config) ([]message.HandlerMiddleware, error) {
	if cfg == nil {
		return nil, errors.New("invalid config: Config is nil: DeadLetter is required")
	}
	if store == nil {
		return nil, errors.New("invalid config: store is nil")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return buildChain(store, consumer, c)
}

// ConsumerHandler adapts h to Watermill's NoPublishHandlerFunc, for
// AddConsumerHandler on a router of your own behind [Middlewares] or
// middleware.Inbox.
func ConsumerHandler[TTx any](h HandlerFunc[TTx]) message.NoPublishHandlerFunc {
	adapted := Adapt(h)
	return func(msg *message.Message) error {
		_, err := adapted(msg)
		return err
	}
}

func buildChain[TTx any](store stores.Store[TTx], consumer string, c Config) ([]message.HandlerMiddleware, error) {
	ic := c.InboxConfig
	ic.Consumer = consumer
	inbox, err := middleware.Inbox(store, &ic)
	if err != nil {
		return nil, err
	}
	deadLetter, err := wmw.PoisonQueueWithFilter(&deadLetterPublisher{pub: c.DeadLetter, logger: c.Logger}, c.DeadLetterTopic, DeadLetterable)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	retry := wmw.Retry{
		MaxRetries:          c.MaxAttempts - 1,
		InitialInterval:     c.RetryInitialInterval,
		MaxInterval:         c.RetryMaxInterval,
		Multiplier:          2,
		RandomizationFactor: 0.2,
		ResetContextOnRetry: true,
		ShouldRetry:         func(p wmw.RetryParams) bool { return Retryable(p.Err) },
	}
	chain := append([]message.HandlerMiddleware{}, c.Middlewares...)
	return append(chain, deadLetter, stampReason, logOutcome(c, consumer),
		retry.Middleware, logAttempt(c, consumer), wmw.Recoverer, wmw.Timeout(c.HandlerTimeout), inbox), nil
}

// Run runs the router until ctx ends or Close is called; see
// message.Router.Run. It returns once every handler stopped. When the
// store reports its migrations ([stores.Operator]), Run first checks them
// and logs [LogSchemaBehind] at error if some are pending, or
// [LogSchemaCheckFailed] if the status could not be read; it runs anyway
// (messages are nacked, never dead-lettered, until the store is migrated
// or reachable).
func (r *Router[TTx]) Run(ctx context.Context) error {
	r.checkSchema(ctx)
	return r.wr.Run(ctx)
}

// schemaCheckTimeout bounds Run's migration check.
const schemaCheckTimeout = 5 * time.Second

// checkSchema logs LogSchemaBehind when the store's migrations are not
// all applied, and LogSchemaCheckFailed when their status cannot be read.
func (r *Router[TTx]) checkSchema(ctx context.Context) {
	op, ok := r.store.(interface {
		MigrationStatus(context.Context, *stores.MigrationStatusParams) (*stores.MigrationStatusResult, error)
	})
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, schemaCheckTimeout)
	defer cancel()
	st, err := op.MigrationStatus(ctx, &stores.MigrationStatusParams{})
	switch {
	case err == nil:
	case errors.Is(err, ackgap.ErrStoreMisconfigured):
		r.cfg.Logger.Error(LogSchemaCheckFailed, err, watermill.LogFields{"cause": "store misconfigured"})
		return
	case errors.Is(err, ackgap.ErrStoreUnavailable):
		warn(r.cfg.Logger, LogSchemaCheckFailed, err, watermill.LogFields{"cause": "store unavailable"})
		return
	default:
		r.cfg.Logger.Error(LogSchemaCheckFailed, err, watermill.LogFields{"cause": "error"})
		return
	}
	if pending := st.Pending(); len(pending) > 0 {
		// An error value, not nil: Watermill's adapters print a nil one
		// as error=<nil>.
		err := fmt.Errorf("schema version %d of %d: %d migrations pending", st.Version, st.Latest, len(pending))
		r.cfg.Logger.Error(LogSchemaBehind, err, watermill.LogFields{
			"version": st.Version, "latest": st.Latest, "pending": len(pending)})
	}
}

// Running is closed when the router is running.
func (r *Router[TTx]) Running() chan struct{} { return r.wr.Running() }

// Close stops fetching, waits up to CloseTimeout for in-flight handlers to
// commit and ack, and closes the subscribers. It is safe to call twice.
func (r *Router[TTx]) Close() error { return r.wr.Close() }

// Retryable reports whether the router retries err in place: not a
// permanent error, not a cancelled context.
func Retryable(err error) bool {
	return !ackgap.IsPermanent(err) && !errors.Is(err, context.Canceled)
}

// DeadLetterable reports whether a final error sends the message to the
// dead-letter topic: a permanent error, or any error left after the
// attempts, except a cancelled context (shutdown is not poison, see
// Watermill PR #556) and ackgap.ErrStoreUnavailable (the database, not the
// message, is broken). Those are nacked and redelivered.
func DeadLetterable(err error) bool {
	if ackgap.IsPermanent(err) {
		return true
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, ackgap.ErrStoreUnavailable)
}

// stampReason records why a message is about to be dead-lettered, in
// metadata key ackgap.MetadataDeadLetterReason, and, for a Kafka record,
// where it came from (ackgap.MetadataSourceTopic, MetadataSourcePartition,
// MetadataSourceOffset, from its ackgap.Delivery); it runs just inside
// Watermill's poison-queue middleware, which publishes the message with
// its metadata.
func stampReason(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		produced, err := h(msg)
		if err != nil && DeadLetterable(err) {
			reason := ackgap.ReasonOf(err)
			if reason == "" {
				reason = ackgap.ReasonAttemptsExhausted
			}
			deadletter.Stamp(msg, reason)
		}
		return produced, err
	}
}
