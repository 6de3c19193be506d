package router_test

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

// addCharge puts the billing handler, behind ackgap's chain, on your
// Watermill router wr: sub delivers orders.placed, and cfg needs at least
// DeadLetter. store is migrated: sqlitestore.Open(ctx, "app.db", nil), then
// store.Migrate(ctx, &stores.MigrateParams{}) (or sqlitestore.Migrations(nil)
// applied with your tool). With pgxstore.New(pool, nil) the tx is a pgx.Tx.
func addCharge(wr *message.Router, store stores.Store[*sql.Tx], sub message.Subscriber, cfg *router.Config) error {
	chain, err := router.Middlewares[*sql.Tx](store, "billing", cfg)
	if err != nil {
		return err
	}
	charge := func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		orderID := string(msg.Payload) // the order id; decoding your payload is yours
		pending, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{
			Table: "orders", Key: orderID, From: []string{"pending"}, To: "charging"})
		if err != nil {
			return err // rolled back, retried, then nacked
		}
		res, err := pending.Result(ctx)
		if err != nil {
			return err // rolled back, retried, then nacked
		}
		if err := res.Err(); err != nil {
			return err // refused: permanent, dead-lettered
		}
		if !res.Applied() {
			return nil // another event moved it and did the rest
		}
		// Your own SQL, in the same transaction.
		if _, err := tx.ExecContext(ctx, `UPDATE customers SET orders = orders + 1 WHERE id = 'c1'`); err != nil {
			return err
		}
		return ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{
			Kind: "charge", IdempotencyKey: "charge:" + orderID, Payload: msg.Payload})
		// nil: the inbox commits, then Watermill acks
	}
	wr.AddConsumerHandler("billing", "orders.placed", sub, router.ConsumerHandler(charge)).
		AddMiddleware(chain...) // first is outermost
	return nil
}

// An existing Watermill router gets the whole safe chain (dead letter,
// retry, recoverer, timeout, inbox) on one of its handlers. The handler
// does its side effects only when its transition applied: an order already
// charging was moved by another event, which already did them.
func ExampleMiddlewares() {
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
CREATE TABLE customers (id TEXT PRIMARY KEY, orders INTEGER NOT NULL);
INSERT INTO orders VALUES ('o1', 'pending'); INSERT INTO customers VALUES ('c1', 0)`); err != nil {
		panic(err)
	}
	pubsub := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	defer pubsub.Close()
	done := make(chan ackgap.Outcome, 3)

	// Your router, your handler; ackgap's chain on it.
	wr, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		panic(err)
	}
	if err := addCharge(wr, store, pubsub, &router.Config{
		DeadLetter:  pubsub, // dead-letter topic "ackgap.dead_letter"
		InboxConfig: middleware.InboxConfig{Observer: func(_ context.Context, r *ackgap.InboxReport) { done <- r.Outcome }},
	}); err != nil {
		panic(err)
	}
	go func() { _ = wr.Run(ctx) }()
	<-wr.Running()

	for _, eventID := range []string{"evt-1", "evt-1", "evt-9"} { // a copy, then another event for o1
		msg := message.NewMessage(watermill.NewUUID(), []byte("o1"))
		msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
		_ = pubsub.Publish("orders.placed", msg)
		fmt.Println(eventID, <-done)
	}
	_ = wr.Close()
	var orders int
	_ = store.DB().QueryRow(`SELECT orders FROM customers WHERE id = 'c1'`).Scan(&orders)
	fmt.Println("customer orders:", orders)
	// Output:
	// evt-1 applied
	// evt-1 duplicate
	// evt-9 applied
	// customer orders: 1
}

// foreignEventIDs is the configuration for messages from a producer you do
// not own: it reads the producer's own id, from a header (CloudEvents'
// ce_id here) or else from the JSON body's "id" field. A message with
// neither is rejected (ackgap.ErrMissingEventID, dead-lettered).
func foreignEventIDs(deadLetter message.Publisher) *router.Config {
	return &router.Config{
		DeadLetter: deadLetter,
		InboxConfig: middleware.InboxConfig{
			EventID: middleware.FirstEventID(
				middleware.EventIDFromMetadata("ce_id"),
				middleware.EventIDFromJSONField("id")),
		},
	}
}

// A producer that puts its event id in the JSON body: the copy of a
// delivery is recognised by that id, not by Watermill's per-send UUID.
func ExampleMiddlewares_foreignEventIDs() {
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
	pubsub := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	defer pubsub.Close()
	done := make(chan ackgap.Outcome, 3)
	cfg := foreignEventIDs(pubsub)
	cfg.InboxConfig.Observer = func(_ context.Context, r *ackgap.InboxReport) { done <- r.Outcome }
	chain, err := router.Middlewares[*sql.Tx](store, "audit", cfg)
	if err != nil {
		panic(err)
	}
	wr, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		panic(err)
	}
	wr.AddConsumerHandler("audit", "payments", pubsub, router.ConsumerHandler(func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		return nil
	})).AddMiddleware(chain...)
	go func() { _ = wr.Run(ctx) }()
	<-wr.Running()

	for _, body := range []string{`{"id":"pay-7","amount":5}`, `{"id":"pay-7","amount":5}`, `{"id":"pay-8","amount":2}`} {
		_ = pubsub.Publish("payments", message.NewMessage(watermill.NewUUID(), []byte(body)))
		fmt.Println(body[7:12], <-done)
	}
	_ = wr.Close()
	// Output:
	// pay-7 applied
	// pay-7 duplicate
	// pay-8 applied
}
