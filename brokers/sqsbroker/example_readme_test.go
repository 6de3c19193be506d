package sqsbroker_test

// The README's SQS snippets, compiled: runSQS is the complete service of
// section "SQS"; runSQSBatched holds the lines the "Batched mode" snippet
// changes in it. The root package's TestREADMESnippetsMirrored fails when
// a README snippet is no longer found here, line for line.

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/retention"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// README: SQS.

// runSQS consumes the queue orders-placed with handle until ctx ends, with
// the outbox relay and the inbox pruner beside it. awsCfg comes from
// config.LoadDefaultConfig(ctx) (github.com/aws/aws-sdk-go-v2/config);
// handle is a handler like chargeOrder above, on pgx.Tx.
func runSQS(ctx context.Context, pool *pgxpool.Pool, awsCfg aws.Config, handle router.HandlerFunc[pgx.Tx]) error {
	log := slog.Default()
	wlog := router.SlogLogger(log) // the Watermill logger the brokers and the router take

	store, err := pgxstore.New(pool, nil)
	if err != nil {
		return err
	}
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		return err
	}
	routerCfg := router.Config{HandlerTimeout: 10 * time.Second, Logger: wlog}
	sub, err := sqsbroker.NewSubscriber(ctx, &sqsbroker.SubscriberConfig{
		AWSConfig: awsCfg, Queue: "orders-placed", // or OptFns for a local endpoint
		AttemptTimeout: routerCfg.HandlerTimeout, // the queue's visibility timeout must be >= 6 x this
	}, wlog)
	if err != nil {
		return err
	}
	routerCfg.DeadLetter, err = sqsbroker.NewDeadLetterPublisher(ctx, &sqsbroker.PublisherConfig{AWSConfig: awsCfg}, "orders-placed-dlq", wlog)
	if err != nil {
		return err
	}
	r, err := router.New[pgx.Tx](store, &routerCfg)
	if err != nil {
		return err
	}
	if err := r.AddHandler("billing", "orders-placed", sub, handle); err != nil {
		return err
	}

	// The outbox relay publishes to other queues; the inbox pruner is tied
	// to the queue's MessageRetentionPeriod (+ the dead-letter queue's, when
	// you redrive): its defaults fit SQS's defaults.
	pub, err := sqsbroker.NewPublisher(&sqsbroker.PublisherConfig{AWSConfig: awsCfg}, wlog)
	if err != nil {
		return err
	}
	relay, err := outbox.New(store, &outbox.Config{Effects: map[string]outbox.Effect{
		"charge":  outbox.HTTP(nil, "https://payments.example/v1/charges"), // Idempotency-Key header
		"receipt": outbox.Publish(pub, "orders-receipts"),                  // the queue's name; event_id = the key
	}})
	if err != nil {
		return err
	}
	pruner, err := retention.New(store, &retention.Config{
		RedeliveryWindow: 4 * 24 * time.Hour,
		OnPrune: func(_ int64, err error) {
			if err != nil {
				log.Error("prune inbox", "error", err) // retried next Interval (1 h)
			}
		},
	})
	if err != nil {
		return err
	}
	go func() { _ = relay.Run(ctx) }()
	go func() { _ = pruner.Run(ctx) }()
	return r.Run(ctx) // until ctx ends: in-flight messages commit, then are deleted
}

// runSQSBatched is runSQS with the README's batch consumer in place of the
// router and its subscriber (the relay and the pruner left out).
func runSQSBatched(ctx context.Context, pool *pgxpool.Pool, awsCfg aws.Config, handle router.HandlerFunc[pgx.Tx]) error {
	wlog := router.SlogLogger(nil)
	store, err := pgxstore.New(pool, nil)
	if err != nil {
		return err
	}

	// README: Batched mode.
	p, err := batch.New[pgx.Tx](store, &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing"},
		Handler:     handle, // each message under its own savepoint (BatchHandler, optional: a whole round in set-based SQL)
	})
	if err != nil {
		return err
	}
	if os.Getenv("AWS_LAMBDA_FUNCTION_NAME") != "" { // on AWS Lambda, behind an SQS event source mapping
		lh, err := sqsbroker.LambdaBatchHandler(p.ProcessErrors, nil)
		if err != nil {
			return err
		}
		lambda.Start(lh) // never returns
	}
	bc, err := sqsbroker.NewBatchConsumer(ctx, p.ProcessErrors, &sqsbroker.SubscriberConfig{AWSConfig: awsCfg, Queue: "orders-placed"}, wlog)
	if err != nil {
		return err
	}
	return bc.Run(ctx) // receive 10, Process, DeleteMessageBatch the acked, nack the rest
}

// The README's SQS service in a main function (SQS_MODE: "" or batched).
// Compiled, not run: it needs SQS and PostgreSQL; the tests of this
// package run the same parts on fauxqs.
func Example_readmeSQS() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	awsCfg := aws.Config{Region: os.Getenv("AWS_REGION")} // in production: config.LoadDefaultConfig(ctx)
	handle := func(ctx context.Context, _ pgx.Tx, msg *message.Message) error { return nil }
	run := map[string]func(context.Context, *pgxpool.Pool, aws.Config, router.HandlerFunc[pgx.Tx]) error{
		"": runSQS, "batched": runSQSBatched,
	}[os.Getenv("SQS_MODE")]
	if err := run(ctx, pool, awsCfg, handle); err != nil {
		panic(err)
	}
}
