package outbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// A handler's transaction records an effect as an outbox row; the relay
// carries it out afterwards, with the row's idempotency key, outside any
// transaction. Run is the long-running form of RunOnce.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ackgap-outbox-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "app.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		panic(err)
	}

	// What the inbox middleware and ackgap.AddOutbox do for a handler.
	res, err := store.BeginInboxDeferred(ctx, &stores.BeginInboxParams{Consumer: "billing", EventID: "order.placed:o1"})
	if err != nil {
		panic(err)
	}
	if err := store.QueueOutboxTx(ctx, res.Tx, &ackgap.OutboxEntry{
		Kind: "email.receipt", IdempotencyKey: "receipt:o1", Payload: []byte("Thank you for order o1"),
	}); err != nil {
		panic(err)
	}
	if err := store.CommitTx(ctx, res.Tx); err != nil {
		panic(err)
	}

	relay, err := outbox.New(store, &outbox.Config{Effects: map[string]outbox.Effect{
		"email.receipt": func(ctx context.Context, row stores.OutboxRow) error {
			// A real mailer gets row.IdempotencyKey, so a repeat is not a second mail.
			fmt.Printf("send %q (key %s, attempt %d)\n", row.Payload, row.IdempotencyKey, row.Attempts)
			return nil
		},
	}})
	if err != nil {
		panic(err)
	}
	n, err := relay.RunOnce(ctx)
	if err != nil {
		panic(err)
	}
	st, err := relay.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("carried out %d, backlog %d\n", n, st.Backlog())
	// Output:
	// send "Thank you for order o1" (key receipt:o1, attempt 1)
	// carried out 1, backlog 0
}
