package router

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

// Metadata keys of a sanitised dead-letter copy (see [Config.DeadLetter]).
const (
	// MetadataDeadLetterSanitized is set on a dead-lettered copy whose
	// metadata was cut down because the dead-letter publisher could not
	// encode the message as it was (ackgap.ErrUnencodable); its value is the
	// publisher's error.
	MetadataDeadLetterSanitized = "ackgap_dead_letter_sanitized"
	// MetadataOriginalMetadata carries, on a sanitised copy, the original
	// metadata as a JSON object whose values are the base64 of each value's
	// bytes (lossless for any bytes). The payload is the original payload.
	MetadataOriginalMetadata = "ackgap_original_metadata"
)

// sanitizedKeys are kept as they are on a sanitised copy: what identifies
// the event, why it was dead-lettered, and its trace.
var sanitizedKeys = []string{ackgap.MetadataEventIDKey, ackgap.MetadataDeadLetterReason, "traceparent", "tracestate"}

// DeadLetterPublishTimeout bounds one dead-letter publish (30 s). The
// publish runs on a context of its own: the message's context with its
// values (trace context) but detached from its cancellation and deadline,
// which have often already passed (the handler timed out, or its deadline
// expired just before it returned a permanent error; Watermill PR #696 for
// #636). A publish that still fails returns its error, so the message is
// nacked, not acked.
const DeadLetterPublishTimeout = 30 * time.Second

// deadLetterPublisher publishes to the configured dead-letter publisher,
// each message on a detached context bounded by DeadLetterPublishTimeout.
// When the message cannot be encoded for that broker (retrying cannot
// help, so the message would be nacked and dead-lettered again forever),
// it publishes a sanitised copy instead: the original payload, the keys in
// sanitizedKeys, MetadataDeadLetterSanitized, and the whole original
// metadata in MetadataOriginalMetadata. If the copy fails too, it returns
// both errors: the message is nacked and left to the broker's redrive
// policy. Any other failure (a transient one) is returned as it is, so the
// message is not acked. It logs [LogDeadLettered] once a publish
// succeeded and [LogDeadLetterFailed] when it failed.
type deadLetterPublisher struct {
	pub    message.Publisher
	logger watermill.LoggerAdapter
}

func (d *deadLetterPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		if err := d.publishDetached(topic, msg); err != nil {
			return err
		}
	}
	return nil
}

// publishDetached publishes msg (or its sanitised copy) with msg's context
// replaced, for the publish only, by a detached one bounded by
// DeadLetterPublishTimeout.
func (d *deadLetterPublisher) publishDetached(topic string, msg *message.Message) error {
	handlerCtx := msg.Context()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(handlerCtx), DeadLetterPublishTimeout)
	defer cancel()
	msg.SetContext(ctx)
	defer msg.SetContext(handlerCtx)
	return d.publish(topic, msg)
}

// publish publishes msg, or its sanitised copy, and logs the result.
func (d *deadLetterPublisher) publish(topic string, msg *message.Message) error {
	note, _ := msg.Context().Value(deadLetterNoteKey{}).(*deadLetterNote)
	if note == nil || note.fields == nil {
		note = &deadLetterNote{fields: watermill.LogFields{"message_uuid": msg.UUID,
			"reason": msg.Metadata.Get(ackgap.MetadataDeadLetterReason), "destination": topic}}
	}
	err := d.pub.Publish(topic, msg)
	if err == nil {
		d.logger.Error(LogDeadLettered, note.err, note.fields)
		return nil
	}
	if errors.Is(err, ackgap.ErrUnencodable) {
		copied, cerr := sanitize(msg, err)
		if cerr == nil {
			copied.SetContext(msg.Context())
			cerr = d.pub.Publish(topic, copied)
		}
		if cerr == nil {
			d.logger.Error(LogDeadLettered, note.err, note.fields.Add(watermill.LogFields{"sanitized": err.Error()}))
			return nil
		}
		err = fmt.Errorf("router: dead-letter publish: %w; the sanitised copy failed too: %w", err, cerr)
	}
	d.logger.Error(LogDeadLetterFailed, note.err, note.fields.Add(watermill.LogFields{"publish_err": err.Error()}))
	return err
}

func (d *deadLetterPublisher) Close() error { return d.pub.Close() }

// sanitize returns msg's sanitised copy (see deadLetterPublisher).
func sanitize(msg *message.Message, cause error) (*message.Message, error) {
	original := make(map[string][]byte, len(msg.Metadata))
	for k, v := range msg.Metadata {
		original[k] = []byte(v)
	}
	attachment, err := json.Marshal(original)
	if err != nil {
		return nil, fmt.Errorf("router: encode the original metadata: %w", err)
	}
	c := message.NewMessage(msg.UUID, msg.Payload)
	for _, k := range sanitizedKeys {
		if v := msg.Metadata.Get(k); v != "" {
			c.Metadata.Set(k, v)
		}
	}
	c.Metadata.Set(MetadataDeadLetterSanitized, printable(cause.Error(), 512))
	c.Metadata.Set(MetadataOriginalMetadata, string(attachment))
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

var _ message.Publisher = (*deadLetterPublisher)(nil)
