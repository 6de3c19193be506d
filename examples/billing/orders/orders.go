// Package orders is the billing consumer of examples/billing: the
// order.placed event, the handler that charges an order, the idempotency
// keys of its outbox rows and the application's orders table. It is the one
// place the handler is written: the demo (examples/billing), its
// simulation (examples/billing/billingsim) and the benchmarks all run this code.
//
// A handler that dedupes, applies a guarded change and records outbox rows:
//
//	r.AddHandler(orders.Consumer, "orders.placed", sub, orders.Handler[pgx.Tx]())
package orders

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/router"
)

// Names the consumer, its events and its outbox rows use.
const (
	// Consumer is the consumer name: it scopes the inbox rows, and every
	// router instance uses it, so an event is applied once whichever
	// instance (partition) receives it.
	Consumer = "billing"
	// TopicPrefix starts the partition topics: orders.placed.0, .1, ...
	TopicPrefix = "orders.placed."
	// EventIDPrefix starts every event id: "order.placed:<order id>". The
	// producer derives the id from the business event, so every copy of the
	// event carries the same id (docs/design.md invariant 5).
	EventIDPrefix = "order.placed:"
	// KindCharge is the outbox kind of the payment charge.
	KindCharge = "charge"
	// KindReceipt is the outbox kind of the receipt e-mail.
	KindReceipt = "email.receipt"
	// StatusPending is an order's state before the event.
	StatusPending = "pending"
	// StatusCharging is an order's state once the event was applied.
	StatusCharging = "charging"
	// Table is the application's orders table (see [DDL]).
	Table = "orders"
	// VersionColumn is the column of [Table] a move bumps, so it counts
	// how many times an order really moved.
	VersionColumn = "version"
)

// DDL creates the application's orders table; the same text runs on
// PostgreSQL, SQLite and MariaDB/MySQL (VARCHAR keys: InnoDB indexes no
// TEXT without a prefix length). It is the example's own schema, not ackgap's
// (ackgap's tables come from the store's Migrate).
const DDL = `CREATE TABLE orders (
    id           VARCHAR(255) PRIMARY KEY,
    status       VARCHAR(32)  NOT NULL DEFAULT 'pending',
    amount_cents INTEGER      NOT NULL,
    email        VARCHAR(320) NOT NULL,
    version      INTEGER NOT NULL DEFAULT 0
)`

// OrderPlaced is the payload of an order.placed event.
type OrderPlaced struct {
	// OrderID is the order's primary key.
	OrderID string `json:"order_id"`
	// AmountCents is the amount to charge, in cents; positive.
	AmountCents int64 `json:"amount_cents"`
	// Email receives the receipt.
	Email string `json:"email"`
}

// ChargePayload is the body of a charge outbox row, for the payment
// provider (the relay passes the row's idempotency key along).
type ChargePayload struct {
	// OrderID is the order charged.
	OrderID string `json:"order_id"`
	// AmountCents is the amount, in cents.
	AmountCents int64 `json:"amount_cents"`
}

// ReceiptPayload is the body of an email.receipt outbox row, for the
// mailer.
type ReceiptPayload struct {
	// OrderID is the order the receipt is for.
	OrderID string `json:"order_id"`
	// Email is the recipient.
	Email string `json:"email"`
	// AmountCents is the amount charged, in cents.
	AmountCents int64 `json:"amount_cents"`
}

// OutboxHeaders are the headers of both outbox rows.
var OutboxHeaders = map[string]string{"content-type": "application/json"}

// ChargeKey returns the idempotency key of an order's charge row: derived
// from the business event, so a relay retry, or a second run of the
// handler, carries the same key.
func ChargeKey(orderID string) string { return "charge:" + orderID }

// ReceiptKey returns the idempotency key of an order's receipt row; see
// [ChargeKey].
func ReceiptKey(orderID string) string { return "receipt:" + orderID }

// EventID returns the event id of the order.placed event of orderID.
func EventID(orderID string) string { return EventIDPrefix + orderID }

// Transition returns the guarded move of ev's order, pending -> charging,
// with its version bumped.
func Transition(ev *OrderPlaced) *ackgap.Transition {
	return &ackgap.Transition{Table: Table, Key: ev.OrderID, From: []string{StatusPending}, To: StatusCharging, VersionColumn: VersionColumn}
}

// Payloads returns the JSON bodies of ev's two outbox rows: the charge
// ([ChargePayload]) and the receipt e-mail ([ReceiptPayload]). The error
// is a JSON encoding error, which these payloads cannot produce.
func Payloads(ev *OrderPlaced) (charge, receipt []byte, err error) {
	charge, err = json.Marshal(ChargePayload{OrderID: ev.OrderID, AmountCents: ev.AmountCents})
	if err != nil {
		return nil, nil, err
	}
	receipt, err = json.Marshal(ReceiptPayload{OrderID: ev.OrderID, Email: ev.Email, AmountCents: ev.AmountCents})
	if err != nil {
		return nil, nil, err
	}
	return charge, receipt, nil
}

// Effects returns the two outbox rows of ev: the charge and the receipt
// e-mail, with their idempotency keys ([ChargeKey], [ReceiptKey]) and
// [Payloads]. They are values, so that a handler passing their addresses
// straight to ackgap.ApplyTransition allocates nothing more. The error
// is [Payloads]'.
func Effects(ev *OrderPlaced) (charge, receipt ackgap.OutboxEntry, err error) {
	chargeBody, receiptBody, err := Payloads(ev)
	if err != nil {
		return charge, receipt, err
	}
	charge = ackgap.OutboxEntry{Kind: KindCharge, IdempotencyKey: ChargeKey(ev.OrderID), Payload: chargeBody, Headers: OutboxHeaders}
	receipt = ackgap.OutboxEntry{Kind: KindReceipt, IdempotencyKey: ReceiptKey(ev.OrderID), Payload: receiptBody, Headers: OutboxHeaders}
	return charge, receipt, nil
}

// Validate returns a permanent error (reason bad_payload) when ev lacks
// an order id, a positive amount or an e-mail address.
func Validate(ev *OrderPlaced) error {
	if ev.OrderID == "" || ev.AmountCents <= 0 || ev.Email == "" {
		return ackgap.Permanent(ackgap.ReasonBadPayload,
			fmt.Errorf("%w: order.placed needs order_id, a positive amount_cents and email", ackgap.ErrBadPayload))
	}
	return nil
}

// ChargeOrder is the handler, written once for every store: it uses only
// ackgap.ApplyTransition, which runs in the message's inbox
// transaction whatever its type. It moves the order pending -> charging
// (guarded, version bumped) and, only if that move applied, records the
// charge and the receipt e-mail in the outbox. An order another event
// already moved gets nothing more; an order in any other state (or none)
// is refused: the message is dead-lettered (reason transition_refused) and
// the transaction, inbox row included, rolls back, so a redrive once the
// order is pending applies it. The handler reads nothing back, so on
// PostgreSQL the whole message is one round trip. No network call happens
// here: the effects leave through the outbox relay (docs/design.md
// invariant 7).
func ChargeOrder[TTx any](ctx context.Context, _ TTx, _ *message.Message, ev OrderPlaced) error {
	if err := Validate(&ev); err != nil {
		return err
	}
	charge, receipt, err := Effects(&ev)
	if err != nil {
		return err
	}
	_, err = ackgap.ApplyTransition(ctx, Transition(&ev), &charge, &receipt)
	return err
}

// Handler returns [ChargeOrder] as a router handler for transaction type
// TTx (pgx.Tx on PostgreSQL, *sql.Tx on SQLite): router.JSON decodes the
// payload, and a payload that is not JSON is dead-lettered as bad_payload.
func Handler[TTx any]() router.HandlerFunc[TTx] {
	return router.JSON[TTx, OrderPlaced](ChargeOrder[TTx])
}
