package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/router"
)

// Names shared by every workload: the same consumer, tables, states and
// outbox rows as examples/billing.
const (
	consumer       = "billing"
	topicPrefix    = "orders.placed."
	statusPending  = "pending"
	statusCharging = "charging"
	kindCharge     = "charge"
	kindReceipt    = "email.receipt"
	eventIDKey     = ackgap.MetadataEventIDKey
)

// ordersDDL is examples/billing's orders table; the same text runs on
// PostgreSQL and SQLite.
const ordersDDL = `CREATE TABLE orders (
    id           TEXT    PRIMARY KEY,
    status       TEXT    NOT NULL DEFAULT 'pending',
    amount_cents INTEGER NOT NULL,
    email        TEXT    NOT NULL,
    version      INTEGER NOT NULL DEFAULT 0
)`

// outboxHeaders are the headers of both outbox rows, and their JSON.
var (
	outboxHeaders     = map[string]string{"content-type": "application/json"}
	outboxHeadersJSON = `{"content-type":"application/json"}`
)

type chargePayload struct {
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
}

type receiptPayload struct {
	OrderID     string `json:"order_id"`
	Email       string `json:"email"`
	AmountCents int64  `json:"amount_cents"`
}

// effects returns the two outbox rows of ev: the charge and the receipt,
// with their idempotency keys and payloads.
func effects(ev *orderPlaced) (chargeKey string, charge []byte, receiptKey string, receipt []byte, err error) {
	charge, err = json.Marshal(chargePayload{OrderID: ev.OrderID, AmountCents: ev.AmountCents})
	if err != nil {
		return "", nil, "", nil, err
	}
	receipt, err = json.Marshal(receiptPayload{OrderID: ev.OrderID, Email: ev.Email, AmountCents: ev.AmountCents})
	if err != nil {
		return "", nil, "", nil, err
	}
	return "charge:" + ev.OrderID, charge, "receipt:" + ev.OrderID, receipt, nil
}

// chargeOrder is examples/billing's handler (chargeOrder in
// examples/billing/billing.go) when queue is true: ackgap.ApplyTransition
// moves the order and, only if that applied, records the two outbox rows,
// all sent with the commit. With queue false it is the same work written
// the way a handler that reads the outcome does: PendingTransition.Result,
// then ackgap.AddOutbox per row (sent with the commit). It is a copy because
// the example is a main package.
func chargeOrder[TTx any](queue bool) router.HandlerFunc[TTx] {
	return router.JSON[TTx](func(ctx context.Context, _ TTx, _ *message.Message, ev orderPlaced) error {
		if ev.OrderID == "" || ev.AmountCents <= 0 || ev.Email == "" {
			return ackgap.Permanent(ackgap.ReasonBadPayload, fmt.Errorf("%w: order.placed needs order_id, a positive amount_cents and email", ackgap.ErrBadPayload))
		}
		chargeKey, charge, receiptKey, receipt, err := effects(&ev)
		if err != nil {
			return err
		}
		transition := &ackgap.Transition{
			Table: "orders", Key: ev.OrderID, From: []string{statusPending}, To: statusCharging, VersionColumn: "version",
		}
		rows := []*ackgap.OutboxEntry{
			{Kind: kindCharge, IdempotencyKey: chargeKey, Payload: charge, Headers: outboxHeaders},
			{Kind: kindReceipt, IdempotencyKey: receiptKey, Payload: receipt, Headers: outboxHeaders},
		}
		if queue {
			_, err := ackgap.ApplyTransition(ctx, transition, rows...)
			return err
		}
		pending, err := ackgap.ApplyTransition(ctx, transition)
		if err != nil {
			return err
		}
		res, err := pending.Result(ctx)
		if err != nil {
			return err
		}
		if err := res.Err(); err != nil || !res.Applied() {
			return err
		}
		for _, row := range rows {
			if err := ackgap.AddOutbox(ctx, row); err != nil {
				return err
			}
		}
		return nil
	})
}

// noop is the handler of the overhead workloads: it does nothing, so what
// is measured is the broker, the router and the dedupe step.
func noop[TTx any](context.Context, TTx, *message.Message) error { return nil }

// decode reads the payload of an order.placed message, for the plain
// Watermill handlers (the ackgap ones use router.JSON).
func decode(msg *message.Message) (orderPlaced, error) {
	var ev orderPlaced
	if err := json.Unmarshal(msg.Payload, &ev); err != nil {
		return ev, ackgap.Permanent(ackgap.ReasonBadPayload, fmt.Errorf("%w: %w", ackgap.ErrBadPayload, err))
	}
	return ev, nil
}
