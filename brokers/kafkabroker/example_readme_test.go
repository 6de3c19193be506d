package kafkabroker_test

// The README's Kafka snippets, compiled: runKafka is the complete service
// of section "Kafka"; runKafkaKeyParallel, runKafkaWithProgress and
// runKafkaBatched hold the lines the later snippets change in it. The
// root package's TestREADMESnippetsMirrored fails when a README snippet is
// no longer found here, line for line.

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/console"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/retention"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/telemetry"
)

// README: Kafka.

// runKafka consumes orders.placed with handle until ctx ends, with the
// outbox relay and the inbox pruner beside it. handle is a handler like
// chargeOrder above, with pgxstore's transaction type: its second
// parameter is a pgx.Tx.
func runKafka(ctx context.Context, pool *pgxpool.Pool, brokers []string, handle router.HandlerFunc[pgx.Tx]) error {
	log := slog.Default()
	wlog := router.SlogLogger(log) // the Watermill logger the brokers and the router take

	store, err := pgxstore.New(pool, nil)
	if err != nil {
		return err
	}
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		return err
	}
	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, wlog)
	if err != nil {
		return err
	}
	defer pub.Close()

	// The outbox relay ("Carry out the outbox") and the inbox pruner, tied
	// to the topic's retention.ms ("Keep the inbox bounded").
	relay, err := outbox.New(store, &outbox.Config{Effects: map[string]outbox.Effect{
		"charge":  outbox.HTTP(nil, "https://payments.example/v1/charges"), // Idempotency-Key header
		"receipt": outbox.Publish(pub, "orders.receipts"),                  // event_id = the key
	}})
	if err != nil {
		return err
	}
	go func() { _ = relay.Run(ctx) }() // until ctx ends
	pruner, err := retention.New(store, &retention.Config{
		RedeliveryWindow: 7 * 24 * time.Hour, Retention: 8 * 24 * time.Hour,
		OnPrune: func(_ int64, err error) {
			if err != nil {
				log.Error("prune inbox", "error", err) // retried next Interval (1 h)
			}
		},
	})
	if err != nil {
		return err
	}
	go func() { _ = pruner.Run(ctx) }()

	routerCfg := router.Config{DeadLetter: pub, DeadLetterTopic: "orders.dlq", Logger: wlog}
	sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{
		Brokers: brokers, ConsumerGroup: "billing",
		HoldTimeout: router.MaxHoldTime(&routerCfg), // the router's longest hold of one message
	}, wlog)
	if err != nil {
		return err
	}
	r, err := router.New[pgx.Tx](store, &routerCfg)
	if err != nil {
		return err
	}
	if err := r.AddHandler("billing", "orders.placed", sub, handle); err != nil {
		return err
	}
	return r.Run(ctx) // until ctx ends: in-flight messages commit, then their offsets
}

// publishOrderPlaced publishes one order's order.placed event.
func publishOrderPlaced(brokers []string, orderID string, payload []byte) error {
	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, nil)
	if err != nil {
		return err
	}
	defer pub.Close()
	msg, err := kafkabroker.NewEvent("order.placed:"+orderID, payload) // the event id, once, at the source
	if err != nil {
		return err
	}
	msg.Metadata.Set(kafkabroker.MetadataPartitionKey, orderID) // one order's events in one partition, in order
	return pub.Publish("orders.placed", msg)
}

// runKafkaDispatch is runKafka with the README's direct dispatch: the
// relay gets the rows right after each commit.
func runKafkaDispatch(ctx context.Context, pool *pgxpool.Pool, brokers []string, handle router.HandlerFunc[pgx.Tx]) error {
	store, pub, _, err := exampleParts(pool, brokers)
	if err != nil {
		return err
	}
	defer pub.Close()
	wlog := router.SlogLogger(nil)
	relay, err := outbox.New(store, &outbox.Config{Effects: map[string]outbox.Effect{
		"charge": outbox.HTTP(nil, "https://payments.example/v1/charges"),
	}})
	if err != nil {
		return err
	}
	go func() { _ = relay.Run(ctx) }()

	// README: direct dispatch.
	routerCfg := router.Config{DeadLetter: pub, DeadLetterTopic: "orders.dlq", Logger: wlog,
		InboxConfig: middleware.InboxConfig{Dispatch: relay}} // batch.Config takes it too

	sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: "billing",
		HoldTimeout: router.MaxHoldTime(&routerCfg)}, wlog)
	if err != nil {
		return err
	}
	return exampleServe(ctx, store, routerCfg, sub, handle)
}

// runKafkaTraced is runKafka with the README's telemetry: tp and mp are the
// OpenTelemetry SDK's providers (nil: the otel globals).
func runKafkaTraced(ctx context.Context, pool *pgxpool.Pool, brokers []string, handle router.HandlerFunc[pgx.Tx], tp trace.TracerProvider, mp metric.MeterProvider) error {
	store, pub, _, err := exampleParts(pool, brokers)
	if err != nil {
		return err
	}
	defer pub.Close()
	wlog := router.SlogLogger(nil)

	// README: See the ack gap: OpenTelemetry.
	tel, err := telemetry.New(&telemetry.Config{TracerProvider: tp, MeterProvider: mp}) // nil = otel globals
	if err != nil {
		return err
	}
	defer tel.Close()
	mw, err := tel.Middleware("", telemetry.SystemKafka) // the one hook
	if err != nil {
		return err
	}
	routerCfg := router.Config{DeadLetter: pub, DeadLetterTopic: "orders.dlq", Logger: wlog,
		Middlewares: []message.HandlerMiddleware{mw}}

	sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: "billing",
		HoldTimeout: router.MaxHoldTime(&routerCfg)}, wlog)
	if err != nil {
		return err
	}
	return exampleServe(ctx, store, routerCfg, sub, handle)
}

// runKafkaWithConsole is runKafkaTraced with the README's console mounted
// on the process's HTTP server.
func runKafkaWithConsole(ctx context.Context, pool *pgxpool.Pool, brokers []string, handle router.HandlerFunc[pgx.Tx]) error {
	store, pub, _, err := exampleParts(pool, brokers)
	if err != nil {
		return err
	}
	defer pub.Close()
	wlog := router.SlogLogger(nil)
	mux := http.NewServeMux()

	// README: See it: the web console.
	rec := console.NewRecorder()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rec.Reader()))
	tel, err := telemetry.New(&telemetry.Config{MeterProvider: mp})
	if err != nil {
		return err
	}
	h, err := console.New(store, &console.Config{Prefix: "/ackgap", Recorder: rec,
		Token: os.Getenv("ACKGAP_CONSOLE_TOKEN")}) // no token: read-only
	if err != nil {
		return err
	}
	mux.Handle("/ackgap/", h)

	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.ListenAndServe() }()
	defer srv.Close()
	defer tel.Close()
	mw, err := tel.Middleware("", telemetry.SystemKafka)
	if err != nil {
		return err
	}
	routerCfg := router.Config{DeadLetter: pub, DeadLetterTopic: "orders.dlq", Logger: wlog,
		Middlewares: []message.HandlerMiddleware{mw}}
	sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: "billing",
		HoldTimeout: router.MaxHoldTime(&routerCfg)}, wlog)
	if err != nil {
		return err
	}
	return exampleServe(ctx, store, routerCfg, sub, handle)
}

// runKafkaKeyParallel is runKafka with the README's key-parallel
// subscriber in place of NewSubscriber.
func runKafkaKeyParallel(ctx context.Context, pool *pgxpool.Pool, brokers []string, handle router.HandlerFunc[pgx.Tx]) error {
	store, pub, routerCfg, err := exampleParts(pool, brokers)
	if err != nil {
		return err
	}
	defer pub.Close()
	wlog := routerCfg.Logger

	// README: Key-parallel consumer.
	sub, err := kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{
		SubscriberConfig: kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: "billing",
			HoldTimeout: router.MaxHoldTime(&routerCfg)}, // as for NewSubscriber
		Ordering:    kafkabroker.OrderingKey, // or OrderingPartition, OrderingUnordered
		MaxInFlight: 64,                      // per partition
	}, wlog)
	if err != nil {
		return err
	}

	return exampleServe(ctx, store, routerCfg, sub, handle)
}

// runKafkaWithProgress is runKafka with the README's progress rows
// ("Database failover and restore") on its subscriber.
func runKafkaWithProgress(ctx context.Context, pool *pgxpool.Pool, brokers []string, handle router.HandlerFunc[pgx.Tx]) error {
	store, pub, routerCfg, err := exampleParts(pool, brokers)
	if err != nil {
		return err
	}
	defer pub.Close()
	wlog := routerCfg.Logger

	// README: Database failover and restore.
	sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{
		Brokers: brokers, ConsumerGroup: "billing",
		HoldTimeout: router.MaxHoldTime(&routerCfg),
		Progress:    store.ProgressReader("billing"), // the router's handler name
	}, wlog)
	if err != nil {
		return err
	}

	return exampleServe(ctx, store, routerCfg, sub, handle)
}

// runKafkaBatched is runKafka with the README's batch consumer in place
// of the router and its subscriber.
func runKafkaBatched(ctx context.Context, pool *pgxpool.Pool, brokers []string, handle router.HandlerFunc[pgx.Tx]) error {
	store, pub, routerCfg, err := exampleParts(pool, brokers)
	if err != nil {
		return err
	}
	defer pub.Close()
	wlog := routerCfg.Logger

	// README: Batched transactions.
	p, err := batch.New[pgx.Tx](store, &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing"},
		Handler:     handle, // each message under its own savepoint (BatchHandler, optional: a whole round in set-based SQL)
	})
	if err != nil {
		return err
	}
	bc, err := kafkabroker.NewBatchConsumer(p.ProcessErrors, &kafkabroker.BatchConsumerConfig{
		ParallelConfig: kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: "billing"}},
		Topic:          "orders.placed", DeadLetter: pub, DeadLetterTopic: "orders.dlq",
	}, wlog)
	if err != nil {
		return err
	}
	return bc.Run(ctx) // until ctx ends: drains, commits every watermark, leaves the group
}

// exampleParts is what runKafka builds before its subscriber.
func exampleParts(pool *pgxpool.Pool, brokers []string) (*pgxstore.Store, message.Publisher, router.Config, error) {
	wlog := router.SlogLogger(nil)
	store, err := pgxstore.New(pool, nil)
	if err != nil {
		return nil, nil, router.Config{}, err
	}
	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, wlog)
	if err != nil {
		return nil, nil, router.Config{}, err
	}
	return store, pub, router.Config{DeadLetter: pub, DeadLetterTopic: "orders.dlq", Logger: wlog}, nil
}

// exampleServe is what runKafka does after its subscriber (the relay and
// the pruner left out).
func exampleServe(ctx context.Context, store *pgxstore.Store, routerCfg router.Config, sub message.Subscriber, handle router.HandlerFunc[pgx.Tx]) error {
	r, err := router.New[pgx.Tx](store, &routerCfg)
	if err != nil {
		return err
	}
	if err := r.AddHandler("billing", "orders.placed", sub, handle); err != nil {
		return err
	}
	return r.Run(ctx)
}

// The README's Kafka service in a main function, in each of its forms
// (KAFKA_MODE: "", dispatch, traced, console, key-parallel, progress,
// batched). Compiled, not run: it
// needs a Kafka cluster and PostgreSQL; the tests of this package run the
// same parts on kfake.
func Example_readmeKafka() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	brokers := strings.Split(os.Getenv("KAFKA_BROKERS"), ",")
	if err := publishOrderPlaced(brokers, "o1", []byte(`{"id":"o1","amount_cents":1250}`)); err != nil {
		panic(err)
	}
	// chargeOrder of the README's "A handler: one import", on pgx.Tx.
	chargeOrder := func(ctx context.Context, _ pgx.Tx, msg *message.Message) error {
		var order struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(msg.Payload, &order); err != nil {
			return ackgap.Permanent(ackgap.ReasonBadPayload, err)
		}
		_, err := ackgap.ApplyTransition(ctx, &ackgap.Transition{
			Table: "orders", Key: order.ID, From: []string{"pending"}, To: "charging"},
			&ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + order.ID, Payload: msg.Payload},
			&ackgap.OutboxEntry{Kind: "receipt", IdempotencyKey: "receipt:" + order.ID, Payload: msg.Payload})
		return err
	}
	run := map[string]func(context.Context, *pgxpool.Pool, []string, router.HandlerFunc[pgx.Tx]) error{
		"": runKafka, "dispatch": runKafkaDispatch, "key-parallel": runKafkaKeyParallel,
		"progress": runKafkaWithProgress, "batched": runKafkaBatched, "console": runKafkaWithConsole,
		"traced": func(ctx context.Context, pool *pgxpool.Pool, brokers []string, handle router.HandlerFunc[pgx.Tx]) error {
			return runKafkaTraced(ctx, pool, brokers, handle, nil, nil) // nil: the otel globals
		},
	}[os.Getenv("KAFKA_MODE")]
	if err := run(ctx, pool, brokers, chargeOrder); err != nil {
		panic(err)
	}
}
