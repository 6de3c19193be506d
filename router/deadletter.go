package router

import (
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/deadletter"
	"github.com/ackgap/ackgap/internal/logfield"
)

// Metadata keys of a sanitised dead-letter copy (see [Config.DeadLetter]).
const (
	// MetadataDeadLetterSanitized is ackgap.MetadataDeadLetterSanitized:
	// set on a dead-lettered copy whose metadata was cut down because the
	// dead-letter publisher could not encode the message as it was
	// (ackgap.ErrUnencodable); its value is the publisher's error.
	MetadataDeadLetterSanitized = ackgap.MetadataDeadLetterSanitized
	// MetadataOriginalMetadata is ackgap.MetadataOriginalMetadata: on a
	// sanitised copy, the original metadata as a JSON object whose values
	// are the base64 of each value's bytes (lossless for any bytes). The
	// payload is the original payload.
	MetadataOriginalMetadata = ackgap.MetadataOriginalMetadata
)

// DeadLetterPublishTimeout bounds one dead-letter publish (30 s). The
// publish runs on a context of its own: the message's context with its
// values (trace context) but detached from its cancellation and deadline,
// which have often already passed (the handler timed out, or its deadline
// expired just before it returned a permanent error; Watermill PR #696 for
// #636). A publish that still fails returns its error, so the message is
// nacked, not acked. kafkabroker.BatchConsumer's dead-letter publish is
// bounded the same way.
const DeadLetterPublishTimeout = deadletter.PublishTimeout

// deadLetterPublisher is the message.Publisher the router gives Watermill's
// poison-queue middleware: it publishes each message to the configured
// dead-letter publisher through deadletter.Publish (a detached context
// bounded by DeadLetterPublishTimeout; a sanitised copy when the message
// cannot be encoded for that broker, since retrying cannot help; if the
// copy fails too, both errors, so the message is nacked and left to the
// broker's redrive policy; any other failure as it is, so the message is
// not acked). It logs [LogDeadLettered] once a publish succeeded and
// [LogDeadLetterFailed] when it failed, with the fields of the note
// logOutcome left in the message context.
type deadLetterPublisher struct {
	pub    message.Publisher
	logger watermill.LoggerAdapter
}

func (d *deadLetterPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		note, _ := msg.Context().Value(deadLetterNoteKey{}).(*deadLetterNote)
		if note == nil || note.fields == nil {
			note = &deadLetterNote{fields: watermill.LogFields{"message_uuid": logfield.ID(msg.UUID),
				"reason": msg.Metadata.Get(ackgap.MetadataDeadLetterReason), "destination": topic}}
		}
		if err := deadletter.Publish(d.pub, d.logger, topic, msg, note.err, note.fields); err != nil {
			return err
		}
	}
	return nil
}

func (d *deadLetterPublisher) Close() error { return d.pub.Close() }

var _ message.Publisher = (*deadLetterPublisher)(nil)
