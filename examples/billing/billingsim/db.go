package billingsim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/stores"
)

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

// seedBatch is how many orders one INSERT statement writes (4 parameters
// each, well inside SQLite's and PostgreSQL's parameter limits).
const seedBatch = 500

// createOrders creates the orders table and inserts evs as pending orders.
func createOrders(ctx context.Context, db appDB, evs []event) error {
	if err := db.exec(ctx, orders.DDL); err != nil {
		return fmt.Errorf("create orders table: %w", err)
	}
	return insertOrders(ctx, db, evs)
}

// insertOrders inserts evs as pending orders, seedBatch per statement.
func insertOrders(ctx context.Context, db appDB, evs []event) error {
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
			args = append(args, ev.body.OrderID, orders.StatusPending, ev.body.AmountCents, ev.body.Email)
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
func countOutbox(ctx context.Context, lister stores.OutboxStore, evs []event) (outboxCounts, error) {
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
		case po == nil || row.Consumer != orders.Consumer || row.EventID != orders.EventID(orderID):
			c.stray++
		case kind == "charge" && row.Kind == orders.KindCharge:
			po.charge++
		case kind == "receipt" && row.Kind == orders.KindReceipt:
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
