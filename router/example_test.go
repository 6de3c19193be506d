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

// A consumer on the embedded defaults (GoChannel + SQLite) receives one
// event twice: the second copy is acked without running the handler.
func Example() {
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
INSERT INTO orders VALUES ('o1', 'pending')`); err != nil {
		panic(err)
	}

	pubsub := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	defer pubsub.Close()
	outcomes := make(chan ackgap.Outcome, 2)
	r, err := router.New[*sql.Tx](store, &router.Config{
		DeadLetter:  pubsub,
		InboxConfig: middleware.InboxConfig{Observer: func(_ context.Context, rep *ackgap.InboxReport) { outcomes <- rep.Outcome }},
	})
	if err != nil {
		panic(err)
	}
	err = r.AddHandler("billing", "orders.placed", pubsub,
		func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
			pending, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{
				Table: "orders", Key: string(msg.Payload), From: []string{"pending"}, To: "charging"})
			if err != nil {
				return err
			}
			res, err := pending.Result(ctx)
			if err != nil {
				return err
			}
			fmt.Println("charging", string(msg.Payload))
			return res.Err()
		})
	if err != nil {
		panic(err)
	}
	go func() { _ = r.Run(ctx) }()
	<-r.Running()

	for range 2 { // the same event, delivered twice
		msg := message.NewMessage(watermill.NewUUID(), []byte("o1"))
		msg.Metadata.Set(ackgap.MetadataEventIDKey, "order.placed:o1")
		_ = pubsub.Publish("orders.placed", msg)
	}
	fmt.Println(<-outcomes, <-outcomes)
	_ = r.Close()
	// Output:
	// charging o1
	// applied duplicate
}
