package ackgap

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ackgap/ackgap/internal/inboxctx"
)

// MetadataEventIDKey is the Watermill metadata key that carries the event
// id by default. Broker adapters map it to a Kafka header and an SQS
// message attribute of the same name.
const MetadataEventIDKey = "event_id"

// MaxEventIDBytesDefault is the default limit on an event id's length:
// 255 bytes keeps the inbox key within any index's limits and leaves room
// in Kafka headers and SQS message attributes.
const MaxEventIDBytesDefault = 255

// TxFromContext returns the transaction the inbox middleware (or package
// batch) opened for the message whose context is ctx (msg.Context() in a
// handler), typed as the store's own transaction: pgx.Tx for pgxstore,
// *sql.Tx for sqlitestore. It returns false outside the inbox middleware
// or for another transaction type.
func TxFromContext[TTx any](ctx context.Context) (TTx, bool) {
	return inboxctx.Tx[TTx](ctx)
}

// EventIDFromContext returns the event id of the message being handled,
// and false outside the inbox middleware (or package batch).
func EventIDFromContext(ctx context.Context) (string, bool) {
	return inboxctx.EventID(ctx)
}

// CheckEventID reports whether id is an event id ackgap accepts: not empty,
// valid UTF-8, no NUL byte (U+0000), and at most maxBytes bytes
// (MaxEventIDBytesDefault when maxBytes is 0 or less). Any other character
// is allowed. The rules keep every id storable as text on every store
// (PostgreSQL refuses invalid UTF-8 and NUL in text) and writable back to
// every broker, so that a rejected message can be dead-lettered with its
// id. It returns nil, or an error wrapping ErrMissingEventID,
// ErrEventIDInvalid or ErrEventIDTooLong; the invalid case
// quotes the id with Go escapes. The inbox middleware and the batch
// processor apply it to every message (see middleware.InboxConfig.EventIDOf);
// producers may call it before they publish.
func CheckEventID(id string, maxBytes int) error {
	if maxBytes <= 0 {
		maxBytes = MaxEventIDBytesDefault
	}
	switch {
	case id == "":
		return ErrMissingEventID
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %+q holds bytes that are not UTF-8", ErrEventIDInvalid, truncateID(id))
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("%w: %+q holds a NUL byte", ErrEventIDInvalid, truncateID(id))
	case len(id) > maxBytes:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrEventIDTooLong, len(id), maxBytes)
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
