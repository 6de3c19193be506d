package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
)

// MetadataPartitionKey is the Watermill metadata key whose value the
// publisher uses as the Kafka record key when [PublisherConfig.PartitionKey]
// is left empty. Set it to the aggregate id (an order id) so every event of
// one aggregate lands in one partition and is consumed in order; a message
// without it is keyed by its event id.
const MetadataPartitionKey = "partition_key"

// ErrEventIDAlreadySet is returned by [StampEventID] when the message
// already carries a different event id: an event id is stamped once, by the
// producer, and never replaced on a resend.
var ErrEventIDAlreadySet = errors.New("kafkabroker: message already has a different event id")

// NewEvent returns a Watermill message with payload whose event id
// (metadata key ackgap.MetadataEventIDKey, "event_id") is eventID. The
// message UUID is eventID as well, so Watermill's logs name the event.
//
// eventID must be stable for the business event ("order-42-placed", a UUID
// stored with the order): publish the same message again, never a fresh
// NewEvent with a new id, or consumers cannot tell the copies apart. It
// returns an error wrapping ackgap.ErrMissingEventID for an empty id,
// ackgap.ErrEventIDInvalid for one that is not valid UTF-8 or holds a NUL
// byte, and ackgap.ErrEventIDTooLong for one over
// ackgap.MaxEventIDBytesDefault (255) bytes (ackgap.CheckEventID).
func NewEvent(eventID string, payload []byte) (*message.Message, error) {
	if err := checkEventID(eventID); err != nil {
		return nil, err
	}
	msg := message.NewMessage(eventID, payload)
	msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
	return msg, nil
}

// StampEventID sets msg's event id (metadata key "event_id") to eventID.
// Stamping the id a message already has is a no-op; a different one
// returns [ErrEventIDAlreadySet] and leaves msg unchanged. It returns an
// error wrapping ackgap.ErrMissingEventID for an empty id,
// ackgap.ErrEventIDInvalid for one that is not valid UTF-8 or holds a NUL
// byte, and ackgap.ErrEventIDTooLong for one over 255 bytes.
func StampEventID(msg *message.Message, eventID string) error {
	if err := checkEventID(eventID); err != nil {
		return err
	}
	switch have := msg.Metadata.Get(ackgap.MetadataEventIDKey); have {
	case "":
		msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
		return nil
	case eventID:
		return nil
	default:
		return fmt.Errorf("%w: has %q, stamping %q", ErrEventIDAlreadySet, have, eventID)
	}
}

func checkEventID(id string) error {
	if id == "" {
		return fmt.Errorf("kafkabroker: %w: an event id is assigned once by the producer and cannot be empty", ackgap.ErrMissingEventID)
	}
	if err := ackgap.CheckEventID(id, ackgap.MaxEventIDBytesDefault); err != nil {
		return fmt.Errorf("kafkabroker: %w", err)
	}
	return nil
}

// PartitionFromContext returns the Kafka partition of the message whose
// context is ctx (msg.Context() in a handler), and false for a message that
// did not come from a Kafka subscriber. It passes through to
// kafka.MessagePartitionFromCtx of watermill-kafka, or reads what
// [ParallelSubscriber] set.
func PartitionFromContext(ctx context.Context) (int32, bool) {
	if r, ok := recordFromContext(ctx); ok {
		return r.partition, true
	}
	return kafka.MessagePartitionFromCtx(ctx)
}

// OffsetFromContext returns the Kafka offset of the message whose context
// is ctx, and false for a message that did not come from a Kafka
// subscriber. An offset names one copy of a message in one partition: it
// is never a dedupe key (docs/design.md invariant 5). Passes through to
// kafka.MessagePartitionOffsetFromCtx, or reads what [ParallelSubscriber]
// set.
func OffsetFromContext(ctx context.Context) (int64, bool) {
	if r, ok := recordFromContext(ctx); ok {
		return r.offset, true
	}
	return kafka.MessagePartitionOffsetFromCtx(ctx)
}

// KeyFromContext returns the Kafka record key of the message whose context
// is ctx (the partition key the publisher set), and false outside a Kafka
// subscriber. Passes through to kafka.MessageKeyFromCtx, or reads what
// [ParallelSubscriber] set.
func KeyFromContext(ctx context.Context) ([]byte, bool) {
	if r, ok := recordFromContext(ctx); ok {
		return r.key, true
	}
	return kafka.MessageKeyFromCtx(ctx)
}

// TimestampFromContext returns the Kafka record timestamp of the message
// whose context is ctx, and false outside a Kafka subscriber. Passes
// through to kafka.MessageTimestampFromCtx, or reads what
// [ParallelSubscriber] set.
func TimestampFromContext(ctx context.Context) (time.Time, bool) {
	if r, ok := recordFromContext(ctx); ok {
		return r.timestamp, true
	}
	return kafka.MessageTimestampFromCtx(ctx)
}
