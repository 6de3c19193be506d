package retention_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ackgap/ackgap/retention"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// startPruner runs the inbox pruner of a new service until ctx ends.
func startPruner(ctx context.Context, store stores.Operator, logger *slog.Logger) (*retention.Pruner, error) {
	pruner, err := retention.New(store, &retention.Config{
		RedeliveryWindow: 7 * 24 * time.Hour, // Kafka: the topic's retention.ms; SQS: MessageRetentionPeriod (+ the DLQ's, if redriven)
		Retention:        8 * 24 * time.Hour, // at least the window; New refuses less
		OnPrune: func(deleted int64, err error) {
			if err != nil {
				logger.Error("prune inbox", "error", err) // retried next Interval (1 h)
			}
		},
	})
	if err != nil {
		return nil, err // invalid config: names every bad field
	}
	go func() { _ = pruner.Run(ctx) }() // next to `go relay.Run(ctx)`, until ctx ends
	return pruner, nil
}

// A new service runs the pruner beside its outbox relay, with the inbox
// retention tied to the broker's: an event older than the topic's
// retention.ms (Kafka) or the queue's MessageRetentionPeriod (SQS) cannot
// be redelivered, so its inbox row may go; a younger one must stay. The
// README's "Keep the inbox bounded" snippet is this code.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "retention-example")
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "app.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		panic(err)
	}
	pruner, err := startPruner(ctx, store, slog.New(slog.DiscardHandler))
	if err != nil {
		panic(err)
	}

	deleted, err := pruner.PruneOnce(ctx)
	fmt.Println(deleted, err)

	_, err = retention.New(store, &retention.Config{RedeliveryWindow: 7 * 24 * time.Hour, Retention: 24 * time.Hour})
	fmt.Println(err != nil)
	// Output:
	// 0 <nil>
	// true
}
