package middleware

import (
	"encoding/json"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
)

// EventIDFunc extracts the producer-assigned event id from a message. It
// returns "" with a nil error when the message has none, and an error when
// the message is malformed. It must be deterministic: every copy of one
// event yields the same id.
type EventIDFunc func(msg *message.Message) (string, error)

// EventIDFromMetadata returns an EventIDFunc that reads metadata key (the
// default extractor uses ackgap.MetadataEventIDKey).
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
