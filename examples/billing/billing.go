package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

// Names the demo's consumer, events and outbox rows use.
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
)

// OrderPlaced is the payload of an order.placed event.
type OrderPlaced struct {
	// OrderID is the order's primary key.
	OrderID string `json:"order_id"`
	// AmountCents is the amount to charge, in cents; positive.
	AmountCents int64 `json:"amount_cents"`
	// Email receives the receipt.
	Email string `json:"email"`
}

// chargePayload is the body of a charge outbox row, for the payment
// provider (the relay passes the row's idempotency key along).
type chargePayload struct {
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
}

// receiptPayload is the body of an email.receipt outbox row.
type receiptPayload struct {
	OrderID     string `json:"order_id"`
	Email       string `json:"email"`
	AmountCents int64  `json:"amount_cents"`
}

// ChargeKey and ReceiptKey return the idempotency keys of an order's
// outbox rows: derived from the business event, so a relay retry, or a
// second run of the handler, carries the same key.
func ChargeKey(orderID string) string { return "charge:" + orderID }

// ReceiptKey: see [ChargeKey].
func ReceiptKey(orderID string) string { return "receipt:" + orderID }

// EventID returns the event id of the order.placed event of orderID.
func EventID(orderID string) string { return EventIDPrefix + orderID }

// chargeOrder is the demo's handler, written once for every store: it uses
// only ackgap.ApplyTransition, which runs in the message's inbox
// transaction whatever its type. It moves the order pending -> charging
// (guarded, version bumped) and, only if that move applied, records the
// charge and the receipt e-mail in the outbox. An order another event
// already moved gets nothing more; an order in any other state (or none)
// is refused: the message is dead-lettered (reason transition_refused) and
// the transaction, inbox row included, rolls back, so a redrive once the
// order is pending applies it. The handler reads nothing back, so on
// PostgreSQL the whole message is one round trip. No network call happens
// here: the effects leave through the outbox relay (docs/design.md invariant 7).
func chargeOrder[TTx any](ctx context.Context, _ TTx, _ *message.Message, ev OrderPlaced) error {
	if ev.OrderID == "" || ev.AmountCents <= 0 || ev.Email == "" {
		return ackgap.Permanent(ackgap.ReasonBadPayload,
			fmt.Errorf("%w: order.placed needs order_id, a positive amount_cents and email", ackgap.ErrBadPayload))
	}
	charge, err := json.Marshal(chargePayload{OrderID: ev.OrderID, AmountCents: ev.AmountCents})
	if err != nil {
		return err
	}
	receipt, err := json.Marshal(receiptPayload{OrderID: ev.OrderID, Email: ev.Email, AmountCents: ev.AmountCents})
	if err != nil {
		return err
	}
	headers := map[string]string{"content-type": "application/json"}
	_, err = ackgap.ApplyTransition(ctx,
		&ackgap.Transition{Table: "orders", Key: ev.OrderID, From: []string{StatusPending}, To: StatusCharging, VersionColumn: "version"},
		&ackgap.OutboxEntry{Kind: KindCharge, IdempotencyKey: ChargeKey(ev.OrderID), Payload: charge, Headers: headers},
		&ackgap.OutboxEntry{Kind: KindReceipt, IdempotencyKey: ReceiptKey(ev.OrderID), Payload: receipt, Headers: headers})
	return err
}

// handler returns chargeOrder as a router handler for transaction type TTx.
func handler[TTx any]() router.HandlerFunc[TTx] {
	return router.JSON[TTx, OrderPlaced](chargeOrder[TTx])
}

// appDB is what the demo needs from the database besides the ackgap store:
// plain SQL on its own orders table. The same SQL runs on SQLite and
// PostgreSQL; only the bind placeholders differ.
type appDB struct {
	// exec runs a statement.
	exec func(ctx context.Context, query string, args ...any) error
	// queryInt runs a query returning one integer.
	queryInt func(ctx context.Context, query string) (int64, error)
	// placeholder returns the bind parameter for position n (1-based).
	placeholder func(n int) string
}

// ordersDDL creates the application's table; it is the example's own
// schema, not ackgap's (ackgap's tables come from store.Migrate).
const ordersDDL = `CREATE TABLE orders (
    id           TEXT    PRIMARY KEY,
    status       TEXT    NOT NULL DEFAULT 'pending',
    amount_cents INTEGER NOT NULL,
    email        TEXT    NOT NULL,
    version      INTEGER NOT NULL DEFAULT 0
)`

// seedBatch is how many orders one INSERT statement writes (4 parameters
// each, well inside SQLite's and PostgreSQL's parameter limits).
const seedBatch = 500

// createOrders creates the orders table and inserts evs as pending orders.
func createOrders(ctx context.Context, db appDB, evs []event) error {
	if err := db.exec(ctx, ordersDDL); err != nil {
		return fmt.Errorf("create orders table: %w", err)
	}
	for start := 0; start < len(evs); start += seedBatch {
		batch := evs[start:min(start+seedBatch, len(evs))]
		var q strings.Builder
		q.WriteString("INSERT INTO orders (id, status, amount_cents, email) VALUES ")
		args := make([]any, 0, 4*len(batch))
		for i, ev := range batch {
			if i > 0 {
				q.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&q, "(%s, %s, %s, %s)", db.placeholder(n+1), db.placeholder(n+2), db.placeholder(n+3), db.placeholder(n+4))
			args = append(args, ev.body.OrderID, StatusPending, ev.body.AmountCents, ev.body.Email)
		}
		if err := db.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("seed orders: %w", err)
		}
	}
	return nil
}

// orderCounts is what the orders table says after the run.
type orderCounts struct {
	moved, movedTwice, notMoved int64
}

func countOrders(ctx context.Context, db appDB) (orderCounts, error) {
	var c orderCounts
	var errs []error
	for _, q := range []struct {
		dst   *int64
		query string
	}{
		{&c.moved, `SELECT count(*) FROM orders WHERE status = 'charging' AND version = 1`},
		{&c.movedTwice, `SELECT count(*) FROM orders WHERE version > 1`},
		{&c.notMoved, `SELECT count(*) FROM orders WHERE status <> 'charging' OR version < 1`},
	} {
		n, err := db.queryInt(ctx, q.query)
		*q.dst = n
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("count orders: %w", err)
	}
	return c, nil
}

// outboxCounts is what the outbox says after the run.
type outboxCounts struct {
	// rows is the number of outbox rows; done and dead count them by
	// final state.
	rows, done, dead int
	// badOrders counts orders without exactly one charge and one receipt
	// row, written by their own event for consumer "billing"; stray counts
	// rows that belong to no order of the run.
	badOrders, stray int
}

// countOutbox reads every outbox row through the store contract
// (ListOutbox) and checks them per order.
func countOutbox(ctx context.Context, lister stores.OutboxLister, evs []event) (outboxCounts, error) {
	res, err := lister.ListOutbox(ctx, &stores.OutboxListParams{Limit: 2*len(evs) + 100})
	if err != nil {
		return outboxCounts{}, fmt.Errorf("list outbox: %w", err)
	}
	type perOrder struct{ charge, receipt int }
	seen := make(map[string]*perOrder, len(evs))
	for _, ev := range evs {
		seen[ev.body.OrderID] = &perOrder{}
	}
	c := outboxCounts{rows: len(res.Rows)}
	for _, row := range res.Rows {
		switch row.State {
		case stores.OutboxDone:
			c.done++
		case stores.OutboxDead:
			c.dead++
		}
		kind, orderID, _ := strings.Cut(row.IdempotencyKey, ":")
		po := seen[orderID]
		switch {
		case po == nil || row.Consumer != Consumer || row.EventID != EventID(orderID):
			c.stray++
		case kind == "charge" && row.Kind == KindCharge:
			po.charge++
		case kind == "receipt" && row.Kind == KindReceipt:
			po.receipt++
		default:
			c.stray++
		}
	}
	for _, po := range seen {
		if po.charge != 1 || po.receipt != 1 {
			c.badOrders++
		}
	}
	return c, nil
}
