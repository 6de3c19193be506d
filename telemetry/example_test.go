package telemetry_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/gochannelbroker"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
	"github.com/ackgap/ackgap/telemetry"
)

// A router on GoChannel and SQLite with telemetry: each delivery becomes
// one consumer span whose events trace the message from receipt to the
// broker's confirmation; a copy of the same event is a duplicate, without
// a commit.
func Example() {
	ctx := context.Background()
	// Your SDK: here a recorder; in production an exporter.
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer tp.Shutdown(ctx)
	defer mp.Shutdown(ctx)

	tel, err := telemetry.New(&telemetry.Config{TracerProvider: tp, MeterProvider: mp, Propagator: propagation.TraceContext{}})
	if err != nil {
		panic(err)
	}
	defer tel.Close()
	mw, err := tel.Middleware("", telemetry.SystemGoChannel)
	if err != nil {
		panic(err)
	}

	dir, _ := os.MkdirTemp("", "ackgap-telemetry")
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "app.db"), nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		panic(err)
	}
	broker := gochannelbroker.New(nil)
	defer broker.Close()
	pub, _ := broker.Publisher()
	sub, _ := broker.Subscriber("billing")

	r, err := router.New(store, &router.Config{
		DeadLetter:  pub,
		Middlewares: []message.HandlerMiddleware{mw}, // outermost: the one hook
	})
	if err != nil {
		panic(err)
	}
	err = r.AddHandler("billing", "orders", sub, func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		return nil // your guarded transitions and outbox rows
	})
	if err != nil {
		panic(err)
	}
	go func() { _ = r.Run(ctx) }()
	<-r.Running()
	defer r.Close()

	for i := range 2 { // the event, then a copy of it
		msg := message.NewMessage(watermill.NewUUID(), []byte(`{}`))
		msg.Metadata.Set(ackgap.MetadataEventIDKey, "order-42-placed")
		_ = pub.Publish("orders", msg) // returns once the message was acked
		for len(spans.Ended()) <= i {  // the span ends just after the ack
			time.Sleep(time.Millisecond)
		}
	}
	for _, s := range spans.Ended() {
		var outcome string
		for _, kv := range s.Attributes() {
			if kv.Key == telemetry.AttrOutcome {
				outcome = kv.Value.AsString()
			}
		}
		var names []string
		for _, e := range s.Events() {
			names = append(names, e.Name)
		}
		fmt.Println(s.Name(), outcome, names)
	}
	// Output:
	// process orders applied [received handler_start commit ack broker_confirmed]
	// process orders duplicate [received ack broker_confirmed]
}
