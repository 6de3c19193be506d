package router

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/logfield"
	"github.com/ackgap/ackgap/middleware"
)

// Log messages of the chain, one per outcome an operator must be able to
// find. Fields: event_id, consumer, handler (Watermill's message UUID as
// message_uuid), and per message the fields named in each constant's doc.
// An event id or UUID that is not plain text (bytes that are not UTF-8,
// control characters) is logged quoted with Go escapes, as the error texts
// quote it (ackgap.CheckEventID).
// Payloads are never logged; error texts are (keep secrets out of them).
const (
	// LogDeadLettered (error): the message was published to the
	// dead-letter topic (logged once the publish succeeded). Fields: reason
	// (an ackgap.Reason* value), destination (the topic), attempts, the
	// handler's final error (the logger's error field: "error" with
	// SlogLogger), and sanitized (the publisher's error) when a sanitised
	// copy went instead (see [Config.DeadLetter]). It is
	// ackgap.LogDeadLettered, which kafkabroker.BatchConsumer logs too.
	LogDeadLettered = ackgap.LogDeadLettered
	// LogDeadLetterFailed (error): the message should go to the dead-letter
	// topic but the publish failed, so it is nacked and delivered again
	// (its handler runs again). Fields: reason, destination, attempts, the
	// handler's final error (the logger's error field), publish_err (why
	// the publish failed). It is ackgap.LogDeadLetterFailed.
	LogDeadLetterFailed = ackgap.LogDeadLetterFailed
	// LogRetrying (warn): an attempt failed and the message is tried again
	// in place. Fields: attempt (1-based, the one that failed),
	// max_attempts, backoff (the nominal wait before the next attempt,
	// randomized by ±20%), err.
	LogRetrying = "attempt failed, retrying"
	// LogNackShutdown (warn): the message is nacked because the router is
	// shutting down (its context was cancelled); the broker redelivers it.
	LogNackShutdown = "message nacked for shutdown"
	// LogNackStoreUnavailable (warn): the message is nacked because the
	// database could not be had; the broker redelivers it.
	LogNackStoreUnavailable = "message nacked: store unavailable"
	// LogAckUnconfirmed (warn): the message was acked after its commit, but
	// the broker did not confirm the ack (Kafka: the offset commit failed;
	// SQS: DeleteMessage failed or the receipt handle had expired), so it
	// will be delivered again and found in the inbox. Fields: err.
	LogAckUnconfirmed = "ack not confirmed by the broker; a duplicate will follow"
	// LogSchemaBehind (error): at Run, the store's migration table says
	// migrations are pending: messages will be nacked as store-unavailable
	// until the store is migrated (ackgap migrate up). Fields: version
	// (applied), latest, pending (how many). It is logged only when the
	// status was read; a check that failed is [LogSchemaCheckFailed].
	LogSchemaBehind = "store schema behind the code: run the migrations (ackgap migrate up)"
	// LogSchemaCheckFailed: at Run, the store's migration status could not
	// be read, so whether the schema is behind is not known; Run goes on.
	// At warn when the store was unavailable (ackgap.ErrStoreUnavailable: a
	// refused or dropped connection, a busy database; messages are nacked
	// until it is back), at error otherwise (ackgap.ErrStoreMisconfigured:
	// missing privileges or database; anything else). Fields: err (the
	// store's error, which says what failed), cause ("store unavailable",
	// "store misconfigured" or "error").
	LogSchemaCheckFailed = "store schema not checked: migration status unreadable"
)

// SlogLogger returns a Watermill LoggerAdapter on l (nil means
// slog.Default()) that also has the warn level Watermill's adapters lack
// (see [WarnLogger]): Config.Logger defaults to SlogLogger(nil). Watermill's
// own logs keep their levels (Trace as slog's Debug-4).
func SlogLogger(l *slog.Logger) WarnLogger {
	if l == nil {
		l = slog.Default()
	}
	return &slogLogger{LoggerAdapter: watermill.NewSlogLogger(l), l: l}
}

// WarnLogger is a Watermill LoggerAdapter with a warn level. The chain logs
// retries, nacks and unconfirmed acks with Warn when Config.Logger
// implements it, and otherwise with Info and the field severity="warn".
type WarnLogger interface {
	watermill.LoggerAdapter
	Warn(msg string, fields watermill.LogFields)
}

type slogLogger struct {
	watermill.LoggerAdapter
	l *slog.Logger
}

func (s *slogLogger) Warn(msg string, fields watermill.LogFields) {
	args := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		args = append(args, k, v)
	}
	s.l.Warn(msg, args...)
}

func (s *slogLogger) With(fields watermill.LogFields) watermill.LoggerAdapter {
	args := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		args = append(args, k, v)
	}
	return SlogLogger(s.l.With(args...))
}

// attemptsKey carries the attempt counter of one message from logOutcome
// (outside Watermill's Retry) to logAttempt (inside it): Retry resets the
// message context on each attempt to the one it was given, which carries
// the counter.
type attemptsKey struct{}

// deadLetterNoteKey carries a *deadLetterNote from logOutcome to the
// deadLetterPublisher, which logs the dead letter once it is published.
type deadLetterNoteKey struct{}

// deadLetterNote is what logOutcome knows about a message on its way to
// the dead-letter topic: the log fields and the handler's final error.
type deadLetterNote struct {
	fields watermill.LogFields
	err    error
}

// logOutcome returns the middleware, just inside the dead-letter
// middleware, that logs how the chain ended for a message: nacked for
// shutdown or an unavailable store (warn), and, through the broker
// adapter's ackgap.Delivery, an ack the broker did not confirm (warn). A
// dead letter is logged by the deadLetterPublisher once its publish
// succeeded or failed, from the note logOutcome leaves in the message
// context.
func logOutcome(c Config, consumer string) message.HandlerMiddleware {
	eventID := c.EventID
	if eventID == nil {
		eventID = middleware.EventIDFromMetadata(ackgap.MetadataEventIDKey)
	}
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			attempts := new(int)
			note := new(deadLetterNote)
			ctx := context.WithValue(msg.Context(), attemptsKey{}, attempts)
			ctx = context.WithValue(ctx, deadLetterNoteKey{}, note)
			msg.SetContext(ctx)
			produced, err := h(msg)
			// Inner middlewares replaced the context: give the dead-letter
			// publisher, which runs after this returns, the one with the note.
			msg.SetContext(ctx)
			fields := func() watermill.LogFields {
				id, _ := eventID(msg)
				return watermill.LogFields{"event_id": logfield.ID(id), "consumer": consumer, "message_uuid": logfield.ID(msg.UUID)}
			}
			switch {
			case err == nil:
				if d, ok := ackgap.DeliveryFromContext(ctx); ok && d.Confirmation == ackgap.ConfirmationReported {
					f := fields()
					d.OnSettled(func(s ackgap.Settlement) {
						if s.Acked && s.Err != nil {
							warn(c.Logger, LogAckUnconfirmed, s.Err, f)
						}
					})
				}
			case DeadLetterable(err):
				reason := ackgap.ReasonOf(err)
				if reason == "" {
					reason = ackgap.ReasonAttemptsExhausted
				}
				note.err = err
				note.fields = fields().Add(watermill.LogFields{
					"reason": reason, "destination": c.DeadLetterTopic, "attempts": *attempts})
			case errors.Is(err, context.Canceled):
				warn(c.Logger, LogNackShutdown, err, fields())
			default:
				warn(c.Logger, LogNackStoreUnavailable, err, fields())
			}
			return produced, err
		}
	}
}

// logAttempt returns the middleware, just inside Watermill's Retry, that
// counts attempts and logs each failed one that will be retried.
func logAttempt(c Config, consumer string) message.HandlerMiddleware {
	eventID := c.EventID
	if eventID == nil {
		eventID = middleware.EventIDFromMetadata(ackgap.MetadataEventIDKey)
	}
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			// Inner middlewares (Timeout) replace the message context and
			// cancel theirs on return: judge shutdown by this one.
			ctx := msg.Context()
			attempts, _ := ctx.Value(attemptsKey{}).(*int)
			if attempts == nil {
				attempts = new(int)
			}
			*attempts++
			produced, err := h(msg)
			if err != nil && Retryable(err) && *attempts < c.MaxAttempts && ctx.Err() == nil {
				id, _ := eventID(msg)
				warn(c.Logger, LogRetrying, err, watermill.LogFields{
					"event_id": logfield.ID(id), "consumer": consumer, "message_uuid": logfield.ID(msg.UUID),
					"attempt": *attempts, "max_attempts": c.MaxAttempts, "backoff": nominalBackoff(c, *attempts),
				})
			}
			return produced, err
		}
	}
}

// nominalBackoff is the wait after failed attempt n (1-based) before
// Watermill's Retry randomizes it: RetryInitialInterval doubled per
// attempt, capped at RetryMaxInterval.
func nominalBackoff(c Config, n int) time.Duration {
	d := c.RetryInitialInterval
	for i := 1; i < n && d < c.RetryMaxInterval; i++ {
		d *= 2
	}
	return min(d, c.RetryMaxInterval)
}

// warn logs at warn level: with Warn when l is a [WarnLogger], else with
// Info and the field severity="warn".
func warn(l watermill.LoggerAdapter, msg string, err error, fields watermill.LogFields) {
	if err != nil {
		fields = fields.Add(watermill.LogFields{"err": err.Error()})
	}
	if w, ok := l.(WarnLogger); ok {
		w.Warn(msg, fields)
		return
	}
	l.Info(msg, fields.Add(watermill.LogFields{"severity": "warn"}))
}

// watermillHandlerError is the message Watermill's router logs at error
// for every handler error, before it nacks the message.
const watermillHandlerError = "Handler returned error"

// routerLogger is the logger [New] gives Watermill's router: Config.Logger,
// except that Watermill's "Handler returned error" goes out at warn (see
// [warn]) when the chain nacks the message for redelivery (ackgap
// classified the error as not dead-letterable: an unavailable store). A
// nack for a failed dead-letter publish stays at error.
type routerLogger struct {
	watermill.LoggerAdapter
}

func (r routerLogger) Error(msg string, err error, fields watermill.LogFields) {
	if msg == watermillHandlerError && err != nil && !DeadLetterable(err) {
		warn(r.LoggerAdapter, msg, err, fields)
		return
	}
	r.LoggerAdapter.Error(msg, err, fields)
}

func (r routerLogger) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return routerLogger{r.LoggerAdapter.With(fields)}
}
