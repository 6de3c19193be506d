package ackgap

import (
	"context"

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
