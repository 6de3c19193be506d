// Package deadletter is the one dead-letter publish path of ackgap, shared
// by package router (behind Watermill's poison-queue middleware) and the
// broker adapters that dead-letter by themselves (kafkabroker's
// BatchConsumer): the metadata stamped on a dead-letter copy, the publish
// on a context detached from the handler's and bounded by
// [PublishTimeout], the sanitised copy when the dead-letter broker cannot
// encode the message, and the log line of the outcome. The names users
// see (metadata keys, log messages) are in package ackgap.
package deadletter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
)

// PublishTimeout bounds one dead-letter publish (30 s); see
// router.DeadLetterPublishTimeout.
const PublishTimeout = 30 * time.Second

// sanitizedKeys are kept as they are on a sanitised copy: what identifies
// the event and its record, why it was dead-lettered, and its trace.
var sanitizedKeys = []string{
	ackgap.MetadataEventIDKey, ackgap.MetadataDeadLetterReason, "traceparent", "tracestate",
	ackgap.MetadataSourceTopic, ackgap.MetadataSourcePartition, ackgap.MetadataSourceOffset,
}

// Stamp sets reason (ackgap.MetadataDeadLetterReason) on msg and, when
// msg's context carries an ackgap.Delivery with an offset (a Kafka
// record), the record's source coordinates (ackgap.MetadataSourceTopic,
// MetadataSourcePartition, MetadataSourceOffset). Source keys msg carried
// already (a dead letter redriven and dead-lettered again) are replaced,
// or removed when msg has no offset, so that they never name another
// record.
func Stamp(msg *message.Message, reason string) {
	msg.Metadata.Set(ackgap.MetadataDeadLetterReason, reason)
	delete(msg.Metadata, ackgap.MetadataSourceTopic)
	delete(msg.Metadata, ackgap.MetadataSourcePartition)
	delete(msg.Metadata, ackgap.MetadataSourceOffset)
	d, ok := ackgap.DeliveryFromContext(msg.Context())
	if !ok || !d.HasOffset {
		return
	}
	if d.Destination != "" {
		msg.Metadata.Set(ackgap.MetadataSourceTopic, d.Destination)
	}
	msg.Metadata.Set(ackgap.MetadataSourcePartition, strconv.FormatInt(int64(d.Partition), 10))
	msg.Metadata.Set(ackgap.MetadataSourceOffset, strconv.FormatInt(d.Offset, 10))
}

// Publish publishes msg to topic on pub as a dead letter and logs the
// outcome on logger, at error either way: ackgap.LogDeadLettered with
// fields and cause (the handler's final error, the logger's error field)
// once a publish succeeded, ackgap.LogDeadLetterFailed with publish_err
// added when it failed. fields is not modified.
//
// The publish runs with msg's context replaced, for the publish only, by
// one with its values (trace context) but detached from its cancellation
// and deadline, which have often passed already, and bounded by
// PublishTimeout. When the publish fails with an error wrapping
// ackgap.ErrUnencodable (retrying cannot help), a sanitised copy goes
// instead: the original payload and UUID, the keys in sanitizedKeys,
// ackgap.MetadataDeadLetterSanitized and ackgap.MetadataOriginalMetadata.
// It returns nil once msg or its copy was published, else the error (both
// errors when the copy failed too): the caller must then nack msg, never
// ack it.
func Publish(pub message.Publisher, logger watermill.LoggerAdapter, topic string, msg *message.Message, cause error, fields watermill.LogFields) error {
	handlerCtx := msg.Context()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(handlerCtx), PublishTimeout)
	defer cancel()
	msg.SetContext(ctx)
	defer msg.SetContext(handlerCtx)

	err := pub.Publish(topic, msg)
	if err == nil {
		logger.Error(ackgap.LogDeadLettered, cause, fields)
		return nil
	}
	if errors.Is(err, ackgap.ErrUnencodable) {
		copied, cerr := sanitize(msg, err)
		if cerr == nil {
			copied.SetContext(ctx)
			cerr = pub.Publish(topic, copied)
		}
		if cerr == nil {
			logger.Error(ackgap.LogDeadLettered, cause, fields.Add(watermill.LogFields{"sanitized": err.Error()}))
			return nil
		}
		err = fmt.Errorf("ackgap: dead-letter publish: %w; the sanitised copy failed too: %w", err, cerr)
	}
	logger.Error(ackgap.LogDeadLetterFailed, cause, fields.Add(watermill.LogFields{"publish_err": err.Error()}))
	return err
}

// sanitize returns msg's sanitised copy (see [Publish]); cause is why msg
// could not be published. It fails only if the original metadata cannot
// be encoded as JSON, which a map of byte slices always can.
func sanitize(msg *message.Message, cause error) (*message.Message, error) {
	original := make(map[string][]byte, len(msg.Metadata))
	for k, v := range msg.Metadata {
		original[k] = []byte(v)
	}
	attachment, err := json.Marshal(original)
	if err != nil {
		return nil, fmt.Errorf("ackgap: encode the original metadata: %w", err)
	}
	c := message.NewMessage(msg.UUID, msg.Payload)
	for _, k := range sanitizedKeys {
		if v := msg.Metadata.Get(k); v != "" {
			c.Metadata.Set(k, v)
		}
	}
	c.Metadata.Set(ackgap.MetadataDeadLetterSanitized, printable(cause.Error(), 512))
	c.Metadata.Set(ackgap.MetadataOriginalMetadata, string(attachment))
	return c, nil
}

// printable returns s with anything but printable ASCII escaped, cut to
// at most n bytes, so it can travel in any broker's metadata.
func printable(s string, n int) string {
	q := strconv.QuoteToASCII(s)
	q = q[1 : len(q)-1] // without the quotes
	if len(q) > n {
		q = q[:n]
	}
	return q
}
