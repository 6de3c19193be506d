package checkact

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"
)

// OutboxRecord is an outgoing event: its EventID is the new event's own,
// made when the event is (field trial, wave 51: e-commerce-platform).
type OutboxRecord struct{ EventID, Topic string }

// appendOutbox inserts the outgoing event into the outbox: its event id is
// not the consumed message's, so no checkact finding.
func appendOutbox(ctx context.Context, tx *sql.Tx, r OutboxRecord) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO outbox_events (event_id, topic) VALUES ($1, $2)", r.EventID, r.Topic)
	return err
}

// ErrDuplicateDelivery says the consumer has seen the event already.
var ErrDuplicateDelivery = errors.New("duplicate delivery")

// markConsumed records the event for the consumer, and maps the unique
// key's failure (23505) to ErrDuplicateDelivery, which the caller reads as
// a replay (field trial, wave 51: e-commerce-platform's idempotency
// marker): the insert is the dedupe, so no checkact finding.
func markConsumed(ctx context.Context, db *sql.DB, ev orderEvent) error {
	_, err := db.ExecContext(ctx, "INSERT INTO consumer_idempotency (event_id, consumer) VALUES ($1, 'orders')", ev.EventID)
	if err != nil && strings.Contains(err.Error(), "23505") {
		return ErrDuplicateDelivery
	}
	return err
}

type orderEvent struct{ EventID string }

func registerOutbox(wr *message.Router, db *sql.DB) {
	wr.AddNoPublisherHandler("orders", "orders", nil, func(msg *message.Message) error {
		ev := orderEvent{EventID: msg.UUID}
		if err := markConsumed(msg.Context(), db, ev); err != nil {
			if errors.Is(err, ErrDuplicateDelivery) {
				return nil
			}
			return err
		}
		tx, err := db.BeginTx(msg.Context(), nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := appendOutbox(msg.Context(), tx, OutboxRecord{EventID: ev.EventID, Topic: "orders.accepted"}); err != nil {
			return err
		}
		return tx.Commit()
	})
}
