// Command prometheus exposes ackgap's OpenTelemetry metrics (ack gap,
// lease headroom, outcomes, duplicates, outbox backlog) on a Prometheus
// endpoint through the OpenTelemetry Prometheus exporter, for Watermill
// users whose dashboards scrape Prometheus.
//
// It runs a router on the embedded defaults (GoChannel and SQLite in a
// temp dir), publishes -events order events (every tenth twice, so
// duplicates show), and serves /metrics on -listen until interrupted:
//
//	go run ./examples/prometheus -listen 127.0.0.1:9464
//	curl -s http://127.0.0.1:9464/metrics | grep ackgap_
//
// With -kafka the router consumes from Kafka instead (kafkabroker's
// watermark engine on the same MeterProvider), so the per-partition
// metrics (ackgap_kafka_partition_*) show as well:
//
//	go run ./examples/prometheus -kafka 127.0.0.1:9092 -topic orders.demo
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/gochannelbroker"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
	"github.com/ackgap/ackgap/telemetry"
)

// options are the example's flags.
type options struct {
	listen string   // address of the /metrics endpoint
	events int      // order events to publish
	kafka  []string // Kafka bootstrap brokers; empty: GoChannel
	topic  string   // topic the events go to
	group  string   // consumer group (Kafka) and handler name
}

func main() {
	var o options
	var kafka string
	flag.StringVar(&o.listen, "listen", "127.0.0.1:9464", "address of the /metrics endpoint")
	flag.IntVar(&o.events, "events", 100, "order events to publish before serving")
	flag.StringVar(&kafka, "kafka", "", "Kafka brokers, comma-separated (e.g. 127.0.0.1:9092); empty: an in-process GoChannel")
	flag.StringVar(&o.topic, "topic", "orders", "topic of the order events")
	flag.StringVar(&o.group, "group", "billing", "consumer group (Kafka) and handler name")
	flag.Parse()
	if kafka != "" {
		o.kafka = strings.Split(kafka, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "prometheus example:", err)
		os.Exit(1)
	}
}

// run publishes events through the router, then serves the metrics on
// o.listen until ctx ends. It sends the bound address to ready, when not
// nil, once the endpoint serves. On GoChannel every event was handled
// before the endpoint serves; on Kafka the router may still be consuming.
func run(ctx context.Context, o options, out io.Writer, ready chan<- string) (err error) {
	// The recipe: a Prometheus registry, the OTel exporter registered in
	// it as the MeterProvider's reader, and ackgap's telemetry on that
	// MeterProvider.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { err = errors.Join(err, mp.Shutdown(context.WithoutCancel(ctx))) }()

	dir, err := os.MkdirTemp("", "ackgap-prometheus-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "app.db"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	if _, err := store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		return err
	}

	tel, err := telemetry.New(&telemetry.Config{
		MeterProvider: mp,
		// The outbox gauges are read at each scrape.
		OutboxStats: func(ctx context.Context) (telemetry.OutboxStats, error) {
			st, err := store.OutboxStats(ctx, &stores.OutboxStatsParams{})
			if err != nil {
				return telemetry.OutboxStats{}, err
			}
			return telemetry.OutboxStats{Pending: st.Backlog(), OldestPendingAge: st.OldestPendingAge(time.Now())}, nil
		},
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tel.Close()) }()
	system := telemetry.SystemGoChannel
	if len(o.kafka) > 0 {
		system = telemetry.SystemKafka
	}
	mw, err := tel.Middleware(o.topic, system)
	if err != nil {
		return err
	}

	routerCfg := &router.Config{Middlewares: []message.HandlerMiddleware{mw}, Logger: watermill.NopLogger{}}
	var (
		pub message.Publisher
		sub message.Subscriber
	)
	if len(o.kafka) == 0 {
		broker := gochannelbroker.New(nil)
		defer broker.Close()
		pub, _ = broker.Publisher()
		sub, _ = broker.Subscriber(o.group)
	} else {
		if pub, err = kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: o.kafka}, nil); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, pub.Close()) }()
		// The watermark engine's per-partition instruments go to the same
		// MeterProvider, so the same registry serves them.
		if sub, err = kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{
			Brokers: o.kafka, ConsumerGroup: o.group, MeterProvider: mp,
			HoldTimeout: router.MaxHoldTime(routerCfg), CloseTimeout: time.Second,
		}, nil); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, sub.Close()) }()
	}
	routerCfg.DeadLetter = pub
	r, err := router.New[*sql.Tx](store, routerCfg)
	if err != nil {
		return err
	}
	// The handler records a receipt to send; no relay runs here, so the
	// rows stay pending and the backlog gauge shows them.
	if err := r.AddHandler(o.group, o.topic, sub, func(ctx context.Context, _ *sql.Tx, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		err := ackgap.AddOutbox(ctx, &ackgap.OutboxEntry{Kind: "receipt", IdempotencyKey: "receipt:" + id, Payload: msg.Payload})
		return err
	}); err != nil {
		return err
	}
	routerDone := make(chan error, 1)
	go func() { routerDone <- r.Run(context.WithoutCancel(ctx)) }()
	defer func() { err = errors.Join(err, r.Close(), <-routerDone) }()
	<-r.Running()

	// GoChannel's Publish returns once the handler acked, so every event
	// was processed when the loop ends; Kafka's once the broker stored it.
	for i := range o.events {
		copies := 1
		if i%10 == 0 {
			copies = 2
		}
		for range copies {
			msg := message.NewMessage(watermill.NewUUID(), []byte(`{"order_id":"`+strconv.Itoa(i)+`"}`))
			msg.Metadata.Set(ackgap.MetadataEventIDKey, "order-"+strconv.Itoa(i))
			if err := pub.Publish(o.topic, msg); err != nil {
				return err
			}
		}
	}

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(out, "published %d events; metrics on http://%s/metrics (Ctrl-C to stop)\n", o.events, ln.Addr())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
