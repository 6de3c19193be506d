package ackgap_test

// The handlers of the README, each compiled here with one ackgap import
// (besides the standard library and Watermill's message type): a handler
// that dedupes, applies a guarded change and records outbox rows needs
// nothing else. example_apply_test.go wires and runs them.

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
)

// chargeOrder moves an order pending -> charging and, only if that
// applied, records the charge and the receipt. It does not read the
// outcome: already charging (another event moved it) writes nothing and
// acks; any other state dead-letters the message (transition_refused). On
// PostgreSQL the whole message is one round trip.
func chargeOrder(ctx context.Context, _ *sql.Tx, msg *message.Message) error {
	var order struct {
		ID          string `json:"id"`
		AmountCents int    `json:"amount_cents"`
	}
	if err := json.Unmarshal(msg.Payload, &order); err != nil {
		return ackgap.Permanent(ackgap.ReasonBadPayload, err)
	}
	_, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{
		Table: "orders", Key: order.ID, From: []string{"pending"}, To: "charging",
	},
		&ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + order.ID, Payload: msg.Payload},
		&ackgap.OutboxEntry{Kind: "receipt", IdempotencyKey: "receipt:" + order.ID, Payload: msg.Payload})
	return err // nil: the inbox commits, then the broker gets the ack
}

// reserveStock takes the ordered quantity from a SKU's stock only while
// the stock lasts (stock >= n, then stock = stock - n, in one guarded
// UPDATE) and asks the warehouse to pick it; when the stock is short it
// reads the refusal and records a back-order instead of dead-lettering.
func reserveStock(ctx context.Context, _ *sql.Tx, msg *message.Message) error {
	var r struct {
		OrderID  string `json:"order_id"`
		SKU      string `json:"sku"`
		Quantity int    `json:"quantity"`
	}
	if err := json.Unmarshal(msg.Payload, &r); err != nil {
		return ackgap.Permanent(ackgap.ReasonBadPayload, err)
	}
	pending, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{
		Table: "stock", KeyColumn: "sku", Key: r.SKU,
		Guards: []ackgap.Guard{{Column: "on_hand", Op: ackgap.GuardGreaterOrEqual, Value: r.Quantity}},
		Set:    []ackgap.Assignment{{Column: "on_hand", Op: ackgap.SetSubtract, Value: r.Quantity}},
	}, &ackgap.OutboxEntry{Kind: "pick", IdempotencyKey: "pick:" + r.OrderID, Payload: msg.Payload})
	if err != nil {
		return err
	}
	res, err := pending.Result(ctx) // read: a refusal is now this handler's decision
	if err != nil {
		return err
	}
	if res.Applied() {
		return nil
	}
	return ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{
		Kind: "backorder", IdempotencyKey: "backorder:" + r.OrderID, Payload: msg.Payload})
}
