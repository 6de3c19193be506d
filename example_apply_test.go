package ackgap_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// The two handlers of example_handlers_test.go behind the router, on the
// embedded defaults (GoChannel + SQLite): an order charged once although
// its event came twice, a reservation while the stock lasts, and a
// back-order when it does not.
func ExampleApplyTransition() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ackgap-example")
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "app.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		panic(err)
	}
	if _, err := store.DB().Exec(`CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL);
CREATE TABLE stock (sku TEXT PRIMARY KEY, on_hand INTEGER NOT NULL);
INSERT INTO orders VALUES ('o1', 'pending'); INSERT INTO stock VALUES ('sku-1', 5)`); err != nil {
		panic(err)
	}
	pubsub := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	defer pubsub.Close()
	outcomes := make(chan ackgap.Outcome, 1)
	r, err := router.New[*sql.Tx](store, &router.Config{
		DeadLetter:  pubsub,
		InboxConfig: middleware.InboxConfig{Observer: func(_ context.Context, rep *ackgap.InboxReport) { outcomes <- rep.Outcome }},
	})
	if err != nil {
		panic(err)
	}
	if err := r.AddHandler("billing", "orders.placed", pubsub, chargeOrder); err != nil {
		panic(err)
	}
	if err := r.AddHandler("inventory", "stock.reserve", pubsub, reserveStock); err != nil {
		panic(err)
	}
	go func() { _ = r.Run(ctx) }()
	<-r.Running()

	send := func(topic, eventID, payload string) {
		msg := message.NewMessage(watermill.NewUUID(), []byte(payload))
		msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
		_ = pubsub.Publish(topic, msg)
		fmt.Println(eventID, <-outcomes)
	}
	send("orders.placed", "placed:o1", `{"id":"o1","amount_cents":500}`)
	send("orders.placed", "placed:o1", `{"id":"o1","amount_cents":500}`) // a copy
	send("stock.reserve", "reserve:o1", `{"order_id":"o1","sku":"sku-1","quantity":3}`)
	send("stock.reserve", "reserve:o2", `{"order_id":"o2","sku":"sku-1","quantity":3}`)
	_ = r.Close()

	var onHand int
	_ = store.DB().QueryRow(`SELECT on_hand FROM stock WHERE sku = 'sku-1'`).Scan(&onHand)
	fmt.Println("on hand:", onHand)
	rows, _ := store.ListOutbox(ctx, &stores.OutboxListParams{})
	for _, row := range rows.Rows {
		fmt.Println("outbox:", row.IdempotencyKey)
	}
	// Output:
	// placed:o1 applied
	// placed:o1 duplicate
	// reserve:o1 applied
	// reserve:o2 applied
	// on hand: 2
	// outbox: charge:o1
	// outbox: receipt:o1
	// outbox: pick:o1
	// outbox: backorder:o2
}
