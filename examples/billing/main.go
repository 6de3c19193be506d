// Command billing is the order-payment consumer demo of ackgap: an
// order.placed event moves an order pending -> charging and records a
// charge and a receipt e-mail in the outbox, in one transaction with the
// inbox row, while the demo injects the three kinds of duplicate delivery
// (sequential, a crash between commit and ack, two copies at once) and
// checks that each order moved once and got exactly two outbox rows.
// Outbox relays carry the rows out against a payment provider and a
// mailer on loopback (HTTP, Idempotency-Key), while the demo loses some of
// the provider's replies; it checks that each order was charged exactly
// once and got one receipt.
//
//	go run ./examples/billing                      # GoChannel, SQLite in a temp dir
//	go run ./examples/billing -dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	go run ./examples/billing -broker kafka -kafka-brokers 127.0.0.1:9092
//	go run ./examples/billing -broker sqs -sqs-endpoint http://127.0.0.1:4566
//
// On Kafka and SQS it also crashes one router instance in the ack gap
// (-crash-restart) and replaces it, and with -external-producer the events
// come from kcat or Node's @aws-sdk/client-sqs instead of ackgap's
// publishers.
//
// Read it in this order:
//
//   - orders/orders.go: the handler, the one piece of code a billing
//     service writes (the event, the guarded move, the two outbox rows and
//     their idempotency keys).
//   - this file: the flags, and the summary with its checks.
//   - examples/billing/billingsim: the wiring (a store, one router.New per
//     partition with the handler, outbox relays against a payment
//     provider and a mailer on loopback) and the fault injection around it
//     (the duplicate plan, the tally of inbox outcomes, the crashed router
//     instance and relay). The benchmarks run the same code.
//
// See README.md for what it shows and the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ackgap/ackgap/examples/billing/billingsim"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		// A second Ctrl-C ends the process at once. Closing a Kafka
		// consumer leaves its group (up to CloseTimeout + LeaveTimeout):
		// say why the prompt waits.
		signal.Stop(sig)
		fmt.Fprintf(os.Stderr, "billing: %v: closing the consumers and the store (Ctrl-C again to quit at once)\n", s)
		cancel()
	}()
	code := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}

// realMain parses args, runs the demo, prints the summary to stdout and
// returns the exit code: 0 when every check passed, 1 when the demo failed
// or a check did not pass, 2 for bad flags.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("billing", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o billingsim.Options
	fs.StringVar(&o.Broker, "broker", billingsim.BrokerGoChannel, "broker: gochannel (in-process), kafka or sqs")
	kafkaBrokers := fs.String("kafka-brokers", billingsim.KafkaBrokersDefault, "Kafka bootstrap addresses, comma-separated (-broker kafka)")
	fs.StringVar(&o.SQSEndpoint, "sqs-endpoint", billingsim.SQSEndpointDefault, "SQS endpoint URL (-broker sqs)")
	fs.BoolVar(&o.CrashRestart, "crash-restart", false, "crash one router instance between commit and ack, and start a replacement (kafka and sqs; default true there)")
	fs.BoolVar(&o.ExternalProducer, "external-producer", false, "publish the events with kcat (kafka) or Node's @aws-sdk/client-sqs (sqs) instead of ackgap's publisher; -dup-concurrent then defaults to 0")
	fs.IntVar(&o.Events, "n", billingsim.EventsDefault, "number of orders and order.placed events")
	fs.Float64Var(&o.DupSeq, "dup-seq", billingsim.DupSeqDefault, "fraction of events published again after the first pass")
	fs.Float64Var(&o.DupCrash, "dup-crash", billingsim.DupCrashDefault, "fraction of events whose first delivery commits, then fails before the ack")
	fs.Float64Var(&o.DupConcurrent, "dup-concurrent", billingsim.DupConcurrentDefault, "fraction of events published twice at once, to two partitions")
	fs.IntVar(&o.Partitions, "partitions", billingsim.PartitionsDefault, "partitions (GoChannel topics, Kafka partitions), one router instance each; on SQS, router instances")
	fs.DurationVar(&o.Timeout, "timeout", billingsim.TimeoutDefault, "how long to wait for the consumer")
	fs.Uint64Var(&o.Seed, "seed", billingsim.SeedDefault, "seed choosing the duplicated events and the lost replies")
	fs.IntVar(&o.Relays, "relays", billingsim.RelaysDefault, "outbox relays carrying out the charges and receipts")
	fs.Float64Var(&o.LostReplies, "lost-replies", billingsim.LostRepliesDefault, "fraction of orders whose first charge reply is lost after the provider charged")
	fs.IntVar(&o.RelayCrash, "relay-crash", billingsim.RelayCrashDefault, "rows a relay calls out for before it is killed mid-effect, leaving them unrecorded (0: no relay crash)")
	fs.BoolVar(&o.RelaysDuring, "relays-during", false, "run the relays while the consumer runs (default: start them once it finished)")
	fs.StringVar(&o.Otel, "otel", billingsim.OtelNone, "export the routers' spans and metrics: none, stdout (JSON, before the summary) or otlp (OTLP/HTTP, OTEL_EXPORTER_OTLP_* variables); the summary prints the ack gap and lease headroom either way")
	plot := fs.String("plot", "", "write histograms of the ack gap and lease headroom to this SVG file")
	dsn := fs.String("dsn", "", "PostgreSQL URL (postgres://...), MariaDB/MySQL (mysql://user@host:3306/db or user@tcp(host:3306)/db); empty: SQLite in a temp dir")
	keep := fs.Bool("keep", false, "keep the PostgreSQL schema (or the SQLite file) at exit")
	fs.StringVar(&o.Console, "console", "", "serve the web console on this address (e.g. 127.0.0.1:8080) during the run")
	fs.StringVar(&o.Prometheus, "prometheus", "", "serve the run's OpenTelemetry metrics at /metrics on this address (e.g. 127.0.0.1:9464), in the Prometheus format")
	hold := fs.Bool("hold", false, "with -console or -prometheus: keep the process and its endpoints up after the run, until Ctrl-C")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "billing: unexpected arguments %q\n", fs.Args())
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["crash-restart"] {
		o.CrashRestart = o.Broker == billingsim.BrokerKafka || o.Broker == billingsim.BrokerSQS
	}
	if o.ExternalProducer && !set["dup-concurrent"] {
		o.DupConcurrent = 0
	}
	for _, b := range strings.Split(*kafkaBrokers, ",") {
		o.KafkaBrokers = append(o.KafkaBrokers, strings.TrimSpace(b))
	}
	if o.Events <= 0 || o.Partitions <= 0 || o.Timeout <= 0 || o.Seed == 0 || o.Relays <= 0 {
		// Zero would silently mean "default" in Options; as a flag it is a mistake.
		fmt.Fprintln(stderr, "billing: -n, -partitions, -timeout, -seed and -relays must be positive")
		return 2
	}

	if *hold && o.Console == "" && o.Prometheus == "" {
		fmt.Fprintln(stderr, "billing: -hold needs -console or -prometheus")
		return 2
	}
	o.OtelOut = stdout
	o.ConsoleReady = func(url, token string) {
		fmt.Fprintf(stdout, "console on %s (log in with token %s to redrive)\n", url, token)
	}
	o.PrometheusReady = func(url string) {
		fmt.Fprintf(stdout, "metrics on %s\n", url)
	}
	printed := false
	if *hold {
		o.Hold = func(s *billingsim.Summary) {
			s.Print(stdout)
			printed = true
			fmt.Fprintln(stdout, "holding: the console and the metrics stay up until Ctrl-C")
			<-ctx.Done()
		}
	}
	sum, err := billingsim.RunDemo(ctx, *dsn, *keep, o)
	if sum != nil {
		if !printed {
			sum.Print(stdout)
		}
		if *plot != "" {
			if perr := billingsim.WritePlot(*plot, sum); perr != nil {
				err = errors.Join(err, perr)
			} else {
				fmt.Fprintf(stdout, "plot written to %s\n", *plot)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "billing: %v\n", err)
		return 1
	}
	if err := sum.Check(); err != nil {
		fmt.Fprintf(stderr, "billing: FAILED:\n%v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "OK: every order moved once with two outbox rows; every duplicate was skipped; every order was charged once and got one receipt")
	return 0
}
