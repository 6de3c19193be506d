package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/router"
)

// Names shared by every workload: the consumer, tables, states and outbox
// rows of examples/billing's handler (package orders), which every ackgap
// workload runs.
const (
	consumer       = orders.Consumer
	topicPrefix    = orders.TopicPrefix
	statusPending  = orders.StatusPending
	statusCharging = orders.StatusCharging
	kindCharge     = orders.KindCharge
	kindReceipt    = orders.KindReceipt
	eventIDKey     = ackgap.MetadataEventIDKey
)

// outboxHeadersJSON is orders.OutboxHeaders as the hand-written and
// ceiling workloads send it.
const outboxHeadersJSON = `{"content-type":"application/json"}`

// orderPlaced is the payload of an order.placed event.
type orderPlaced = orders.OrderPlaced

// effects returns the two outbox rows of ev as the hand-written and
// ceiling workloads insert them: the charge and the receipt, with their
// idempotency keys and payloads (orders.ChargeKey, ReceiptKey, Payloads).
func effects(ev *orderPlaced) (chargeKey string, charge []byte, receiptKey string, receipt []byte, err error) {
	charge, receipt, err = orders.Payloads(ev)
	if err != nil {
		return "", nil, "", nil, err
	}
	return orders.ChargeKey(ev.OrderID), charge, orders.ReceiptKey(ev.OrderID), receipt, nil
}

// chargeOrder is examples/billing's handler (orders.Handler) when queue is
// true: ackgap.ApplyTransition moves the order and, only if that applied,
// records the two outbox rows, all sent with the commit. With queue false
// it is the same work written the way a handler that reads the outcome
// does: PendingTransition.Result, then ackgap.AddOutbox per row (sent with
// the commit).
func chargeOrder[TTx any](queue bool) router.HandlerFunc[TTx] {
	if queue {
		return orders.Handler[TTx]()
	}
	return router.JSON[TTx](func(ctx context.Context, _ TTx, _ *message.Message, ev orderPlaced) error {
		if err := orders.Validate(&ev); err != nil {
			return err
		}
		charge, receipt, err := orders.Effects(&ev)
		if err != nil {
			return err
		}
		pending, err := ackgap.ApplyTransition(ctx, orders.Transition(&ev))
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
		for _, row := range []*ackgap.OutboxEntry{&charge, &receipt} {
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
