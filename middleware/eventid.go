package middleware

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
)

// MetadataEventIDKey is the Watermill metadata key that carries the event
// id by default. Broker adapters map it to a Kafka header and an SQS
// message attribute of the same name.
const MetadataEventIDKey = "event_id"

// MaxEventIDBytesDefault is the default limit on an event id's length:
// 255 bytes keeps the inbox key within any index's limits and leaves room
// in Kafka headers and SQS message attributes.
const MaxEventIDBytesDefault = 255

// CheckEventID reports whether id is an event id ackgap accepts: not empty,
// valid UTF-8, no NUL byte (U+0000), and at most maxBytes bytes
// (MaxEventIDBytesDefault when maxBytes is 0 or less). Any other character
// is allowed. The rules keep every id storable as text on every store
// (PostgreSQL refuses invalid UTF-8 and NUL in text) and writable back to
// every broker, so that a rejected message can be dead-lettered with its
// id. It returns nil, or an error wrapping ackgap.ErrMissingEventID,
// ackgap.ErrEventIDInvalid or ackgap.ErrEventIDTooLong; the invalid case
// quotes the id with Go escapes. The inbox middleware and the batch
// processor apply it to every message (see [InboxConfig.EventIDOf]);
// producers may call it before they publish.
func CheckEventID(id string, maxBytes int) error {
	if maxBytes <= 0 {
		maxBytes = MaxEventIDBytesDefault
	}
	switch {
	case id == "":
		return ackgap.ErrMissingEventID
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %+q holds bytes that are not UTF-8", ackgap.ErrEventIDInvalid, truncateID(id))
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("%w: %+q holds a NUL byte", ackgap.ErrEventIDInvalid, truncateID(id))
	case len(id) > maxBytes:
		return fmt.Errorf("%w: %d bytes, limit %d", ackgap.ErrEventIDTooLong, len(id), maxBytes)
	}
	return nil
}

// truncateID keeps error messages short when an id is both invalid and long.
func truncateID(id string) string {
	const max = 64
	if len(id) <= max {
		return id
	}
	return id[:max] + "..."
}

// EventIDFunc extracts the producer-assigned event id from a message. It
// returns "" with a nil error when the message has none, and an error when
// the message is malformed. It must be deterministic: every copy of one
// event yields the same id.
type EventIDFunc func(msg *message.Message) (string, error)

// EventIDFromMetadata returns an EventIDFunc that reads metadata key (the
// default extractor uses [MetadataEventIDKey]).
func EventIDFromMetadata(key string) EventIDFunc {
	return func(msg *message.Message) (string, error) {
		return msg.Metadata.Get(key), nil
	}
}

// EventIDFromJSONField returns an EventIDFunc that reads a top-level string
// field of a JSON payload, for producers that put the id in the body. A
// payload that is not a JSON object is a permanent error
// (ackgap.ReasonBadPayload); a missing or non-string field yields "".
func EventIDFromJSONField(field string) EventIDFunc {
	return func(msg *message.Message) (string, error) {
		var body map[string]json.RawMessage
		if err := json.Unmarshal(msg.Payload, &body); err != nil {
			return "", ackgap.Permanent(ackgap.ReasonBadPayload, fmt.Errorf("%w: %w", ackgap.ErrBadPayload, err))
		}
		var id string
		if raw, ok := body[field]; ok && json.Unmarshal(raw, &id) == nil {
			return id, nil
		}
		return "", nil
	}
}

// FirstEventID returns an EventIDFunc that tries fns in order and returns
// the first non-empty id. The first error stops it.
func FirstEventID(fns ...EventIDFunc) EventIDFunc {
	return func(msg *message.Message) (string, error) {
		for _, fn := range fns {
			id, err := fn(msg)
			if err != nil || id != "" {
				return id, err
			}
		}
		return "", nil
	}
}
