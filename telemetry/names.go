package telemetry

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/ackgap/ackgap"
)

// Metric names. Those under messaging. come from OpenTelemetry's semantic
// conventions v1.41.0 (the only semconv version this package uses); those
// under ackgap. are ackgap's own. None has a high-cardinality attribute:
// event ids, message ids, partitions and offsets are on spans only.
const (
	// MetricProcessDuration (semconv messaging.process.duration,
	// histogram, s): from the middleware receiving the message to the
	// handler chain returning (commit included, ack excluded). Attributes:
	// messaging.system, messaging.operation.name ("process"),
	// messaging.destination.name, messaging.consumer.group.name (when the
	// adapter knows it), error.type (on failure), ackgap.consumer,
	// ackgap.outcome.
	MetricProcessDuration = "messaging.process.duration"
	// MetricAckGap (histogram, s): the ack gap, from the inbox commit to
	// the broker's confirmation of the ack, for applied messages; when the
	// adapter cannot observe the confirmation, to the ack (attribute
	// ackgap.broker_confirmation says which). Attributes: messaging.system,
	// messaging.destination.name, messaging.consumer.group.name,
	// ackgap.consumer, ackgap.broker_confirmation.
	MetricAckGap = "ackgap.ack_gap"
	// MetricLeaseHeadroom (histogram, s): the lease deadline (SQS
	// visibility timeout, as last extended) minus the broker's confirmation
	// of the ack, for acked messages whose adapter reports a lease.
	// Negative: the message was visible again before the ack was
	// confirmed, so a duplicate is coming. Attributes as MetricAckGap.
	MetricLeaseHeadroom = "ackgap.lease_headroom"
	// MetricOutcomes (counter, {message}): deliveries processed, by
	// ackgap.outcome. Attributes: messaging.system,
	// messaging.destination.name, messaging.consumer.group.name,
	// ackgap.consumer, ackgap.outcome.
	MetricOutcomes = "ackgap.outcomes"
	// MetricDuplicatesSkipped (counter, {message}): deliveries the inbox
	// found already processed (outcome duplicate). Attributes as
	// MetricOutcomes without ackgap.outcome.
	MetricDuplicatesSkipped = "ackgap.duplicates_skipped"
	// MetricAcksUnconfirmed (counter, {message}): acks the broker did not
	// confirm (ackgap.ErrAckNotConfirmed: a partition revoked before the
	// offset commit, a failed SQS delete); each is a redelivery to come.
	// Attributes as MetricDuplicatesSkipped.
	MetricAcksUnconfirmed = "ackgap.acks_unconfirmed"
	// MetricOutboxBacklog (observable gauge, {row}) and
	// MetricOutboxOldestPendingAge (observable gauge, s) report
	// Config.OutboxStats; they exist only when it is set.
	MetricOutboxBacklog          = "ackgap.outbox.backlog"
	MetricOutboxOldestPendingAge = "ackgap.outbox.oldest_pending_age"
)

// Span events of the consumer span, in the order they happen. Their
// timestamps are the times the middleware, the inbox and the broker
// adapter recorded, not the times the events were added.
const (
	// EventReceived: the middleware got the message from the router (the
	// span's start).
	EventReceived = "received"
	// EventHandlerStart: the inbox began its transaction and called the
	// handler; once per attempt (attribute ackgap.attempt). Absent when the
	// handler was not called: a duplicate the inbox found first, a message
	// rejected for its event id.
	EventHandlerStart = "handler_start"
	// EventCommit: the inbox transaction committed. Only for outcome
	// applied.
	EventCommit = "commit"
	// EventAttemptFailed: an attempt failed and was rolled back
	// (attributes ackgap.attempt, error.type, exception.message).
	EventAttemptFailed = "attempt_failed"
	// EventAck: the router acked the message, as the broker adapter (or,
	// without one that reports, the middleware) saw it.
	EventAck = "ack"
	// EventNack: the router nacked the message; it will be redelivered.
	EventNack = "nack"
	// EventBrokerConfirmed: the broker confirmed the ack (Kafka: the
	// offset commit returned; SQS: DeleteMessage returned; GoChannel: at
	// the ack). Absent when the adapter cannot observe it.
	EventBrokerConfirmed = "broker_confirmed"
	// EventConfirmationFailed: the broker did not confirm the ack
	// (attributes error.type, exception.message); the span's status is
	// Error.
	EventConfirmationFailed = "broker_confirmation_failed"
	// EventAbandoned: neither ack nor nack came (a subscriber stopped, the
	// message context ended, or [Telemetry.Close] was called).
	EventAbandoned = "abandoned"
)

// Span attribute keys of ackgap's own; the messaging.* and error.type
// keys come from semconv v1.41.0.
const (
	// AttrEventID: the producer-assigned event id (spans only).
	AttrEventID = attribute.Key("ackgap.event_id")
	// AttrConsumer: the inbox consumer name.
	AttrConsumer = attribute.Key("ackgap.consumer")
	// AttrOutcome: applied, duplicate, failed, rejected or dead_lettered
	// (see the Outcome constants).
	AttrOutcome = attribute.Key("ackgap.outcome")
	// AttrAttempts: attempts through the inbox within this delivery
	// (in-place retries of package router).
	AttrAttempts = attribute.Key("ackgap.attempts")
	// AttrAttempt: the attempt number of a handler_start or attempt_failed
	// event, from 1.
	AttrAttempt = attribute.Key("ackgap.attempt")
	// AttrDeliveryAttempt: the broker's delivery count, this delivery
	// included (SQS ApproximateReceiveCount); absent when the broker does
	// not count (Kafka, GoChannel).
	AttrDeliveryAttempt = attribute.Key("ackgap.delivery_attempt")
	// AttrBrokerConfirmation: how the ack's confirmation was seen:
	// confirmed, at_ack, unobserved, failed or none (see the Confirmation
	// constants).
	AttrBrokerConfirmation = attribute.Key("ackgap.broker_confirmation")
	// AttrAckGap: the ack gap of this delivery, in seconds (as
	// MetricAckGap).
	AttrAckGap = attribute.Key("ackgap.ack_gap")
	// AttrLeaseHeadroom: the lease headroom of this delivery, in seconds
	// (as MetricLeaseHeadroom).
	AttrLeaseHeadroom = attribute.Key("ackgap.lease_headroom")
	// AttrLeaseExpired: true when the ack was confirmed after the lease
	// deadline: the message was visible again (set only with a lease).
	AttrLeaseExpired = attribute.Key("ackgap.lease_expired")
	// AttrDeadLetterReason: why the message was dead-lettered
	// (ackgap.MetadataDeadLetterReason).
	AttrDeadLetterReason = attribute.Key("ackgap.dead_letter_reason")
	// AttrLinkKind, on a span link, says what the linked span is:
	// LinkFirstDelivery for the span of the delivery that applied the
	// event, on a duplicate's span (from the traceparent the inbox row
	// keeps). The producer's link has no kind.
	AttrLinkKind = attribute.Key("ackgap.link.kind")
)

// LinkFirstDelivery is the [AttrLinkKind] of a duplicate's link to the
// span of the delivery that applied the event.
const LinkFirstDelivery = "first_delivery"

// Values of [AttrOutcome]: ackgap.Outcome's values, plus
// OutcomeDeadLettered (the router sent the message to the dead-letter
// topic and acked it) and OutcomeUnknown (no inbox report: the middleware
// ran without the inbox behind it).
const (
	OutcomeApplied      = "applied"
	OutcomeDuplicate    = "duplicate"
	OutcomeFailed       = "failed"
	OutcomeRejected     = "rejected"
	OutcomeDeadLettered = "dead_lettered"
	OutcomeUnknown      = "unknown"
)

// Values of [AttrBrokerConfirmation].
const (
	// ConfirmationConfirmed: the adapter saw the broker confirm the ack.
	ConfirmationConfirmed = "confirmed"
	// ConfirmationAtAck: the ack is the confirmation (in-process broker).
	ConfirmationAtAck = "at_ack"
	// ConfirmationUnobserved: the adapter cannot see the confirmation;
	// ack gap and lease headroom are measured to the ack.
	ConfirmationUnobserved = "unobserved"
	// ConfirmationFailed: the broker did not confirm the ack.
	ConfirmationFailed = "failed"
	// ConfirmationNone: nothing to confirm (nacked or abandoned).
	ConfirmationNone = "none"
)

// errorType returns a low-cardinality error.type for err: the dead-letter
// reason of a permanent error, "canceled", "timeout" or
// "store_unavailable" for those conditions, "ack_not_confirmed", and
// otherwise semconv's ErrorType (the Go type of the innermost error
// wrapped with fmt.Errorf).
func errorType(err error) string {
	switch {
	case ackgap.IsPermanent(err):
		return ackgap.ReasonOf(err)
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, ackgap.ErrStoreUnavailable):
		return "store_unavailable"
	case errors.Is(err, ackgap.ErrAckNotConfirmed):
		return "ack_not_confirmed"
	}
	return semconv.ErrorType(err).Value.AsString()
}

// Metric kinds, for the attribute cache.
const (
	kindProcess = iota
	kindOutcome
	kindConsumer // duplicates, unconfirmed acks
	kindAck      // ack gap, lease headroom
)

// attrKey names one metric attribute set.
type attrKey struct {
	kind                                 int
	system, destination, group, consumer string
	outcome, errorType, confirmation     string
}

// attrCache keeps the attribute sets already built: they are few (every
// value is low-cardinality) and building one sorts and allocates.
type attrCache struct {
	mu   sync.RWMutex
	sets map[attrKey]metric.MeasurementOption
}

// attrCacheMax bounds the cache; beyond it sets are built per use.
const attrCacheMax = 4096

func (c *attrCache) get(k attrKey) metric.MeasurementOption {
	c.mu.RLock()
	o, ok := c.sets[k]
	c.mu.RUnlock()
	if ok {
		return o
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, semconv.MessagingSystemKey.String(k.system))
	if k.destination != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(k.destination))
	}
	if k.group != "" {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(k.group))
	}
	if k.consumer != "" {
		attrs = append(attrs, AttrConsumer.String(k.consumer))
	}
	switch k.kind {
	case kindProcess:
		attrs = append(attrs, semconv.MessagingOperationName("process"), AttrOutcome.String(k.outcome))
		if k.errorType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(k.errorType))
		}
	case kindOutcome:
		attrs = append(attrs, AttrOutcome.String(k.outcome))
	case kindAck:
		attrs = append(attrs, AttrBrokerConfirmation.String(k.confirmation))
	}
	o = metric.WithAttributeSet(attribute.NewSet(attrs...))
	c.mu.Lock()
	if c.sets == nil {
		c.sets = make(map[attrKey]metric.MeasurementOption)
	}
	if len(c.sets) < attrCacheMax {
		c.sets[k] = o
	}
	c.mu.Unlock()
	return o
}
