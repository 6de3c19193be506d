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
// See README.md for what it shows and the flags.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// realMain parses args, runs the demo, prints the summary to stdout and
// returns the exit code: 0 when every check passed, 1 when the demo failed
// or a check did not pass, 2 for bad flags.
func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("billing", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Broker, "broker", BrokerGoChannel, "broker: gochannel (in-process), kafka or sqs")
	kafkaBrokers := fs.String("kafka-brokers", KafkaBrokersDefault, "Kafka bootstrap addresses, comma-separated (-broker kafka)")
	fs.StringVar(&o.SQSEndpoint, "sqs-endpoint", SQSEndpointDefault, "SQS endpoint URL (-broker sqs)")
	fs.BoolVar(&o.CrashRestart, "crash-restart", false, "crash one router instance between commit and ack, and start a replacement (kafka and sqs; default true there)")
	fs.BoolVar(&o.ExternalProducer, "external-producer", false, "publish the events with kcat (kafka) or Node's @aws-sdk/client-sqs (sqs) instead of ackgap's publisher; -dup-concurrent then defaults to 0")
	fs.IntVar(&o.Events, "n", EventsDefault, "number of orders and order.placed events")
	fs.Float64Var(&o.DupSeq, "dup-seq", DupSeqDefault, "fraction of events published again after the first pass")
	fs.Float64Var(&o.DupCrash, "dup-crash", DupCrashDefault, "fraction of events whose first delivery commits, then fails before the ack")
	fs.Float64Var(&o.DupConcurrent, "dup-concurrent", DupConcurrentDefault, "fraction of events published twice at once, to two partitions")
	fs.IntVar(&o.Partitions, "partitions", PartitionsDefault, "partitions (GoChannel topics, Kafka partitions), one router instance each; on SQS, router instances")
	fs.DurationVar(&o.Timeout, "timeout", TimeoutDefault, "how long to wait for the consumer")
	fs.Uint64Var(&o.Seed, "seed", SeedDefault, "seed choosing the duplicated events and the lost replies")
	fs.IntVar(&o.Relays, "relays", RelaysDefault, "outbox relays carrying out the charges and receipts")
	fs.Float64Var(&o.LostReplies, "lost-replies", LostRepliesDefault, "fraction of orders whose first charge reply is lost after the provider charged")
	fs.IntVar(&o.RelayCrash, "relay-crash", RelayCrashDefault, "rows a relay calls out for before it is killed mid-effect, leaving them unrecorded (0: no relay crash)")
	fs.BoolVar(&o.RelaysDuring, "relays-during", false, "run the relays while the consumer runs (default: start them once it finished)")
	fs.StringVar(&o.Otel, "otel", OtelNone, "export the routers' spans and metrics: none, stdout (JSON, before the summary) or otlp (OTLP/HTTP, OTEL_EXPORTER_OTLP_* variables); the summary prints the ack gap and lease headroom either way")
	plot := fs.String("plot", "", "write histograms of the ack gap and lease headroom to this SVG file")
	dsn := fs.String("dsn", "", "PostgreSQL URL (postgres://...); empty: SQLite in a temp dir")
	keep := fs.Bool("keep", false, "keep the PostgreSQL schema (or the SQLite file) at exit")
	fs.StringVar(&o.Console, "console", "", "serve the web console on this address (e.g. 127.0.0.1:8080) during the run")
	hold := fs.Bool("hold", false, "with -console: keep the process and the console up after the run, until Ctrl-C")
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
		o.CrashRestart = o.Broker == BrokerKafka || o.Broker == BrokerSQS
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

	if *hold && o.Console == "" {
		fmt.Fprintln(stderr, "billing: -hold needs -console")
		return 2
	}
	o.OtelOut = stdout
	o.ConsoleReady = func(url, token string) {
		fmt.Fprintf(stdout, "console on %s (log in with token %s to redrive)\n", url, token)
	}
	printed := false
	if *hold {
		o.Hold = func(s *Summary) {
			s.Print(stdout)
			printed = true
			fmt.Fprintln(stdout, "holding: the console stays up until Ctrl-C")
			<-ctx.Done()
		}
	}
	sum, err := runDemo(ctx, *dsn, *keep, o)
	if sum != nil && !printed {
		sum.Print(stdout)
		if *plot != "" {
			if perr := writePlot(*plot, sum); perr != nil {
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

// runDemo opens the store dsn names (SQLite in a temp dir when empty),
// runs the demo on it and closes it.
func runDemo(ctx context.Context, dsn string, keep bool, o Options) (*Summary, error) {
	if dsn == "" {
		b, err := openSQLite(ctx, keep)
		if err != nil {
			return nil, err
		}
		return runAndClose(ctx, b, o)
	}
	// Room for every instance's transactions (one per partition on
	// GoChannel and Kafka, one per worker on SQS; with CrashRestart, a
	// replacement instance's too), a concurrent copy, the demo's own queries, and two short
	// statements per relay (a claim and a record; effects hold none, and
	// each relay listens on a connection outside the pool).
	od := o.WithDefaults()
	instances, perInstance := od.Partitions, 1
	if od.CrashRestart {
		instances++
	}
	if od.Broker == BrokerSQS {
		perInstance = sqsbroker.WorkersDefault
	}
	b, err := openPostgres(ctx, dsn, int32(instances*perInstance+2+2*od.Relays), keep)
	if err != nil {
		return nil, err
	}
	return runAndClose(ctx, b, o)
}

func runAndClose[TTx any](ctx context.Context, b *backend[TTx], o Options) (s *Summary, err error) {
	defer func() {
		if cerr := b.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", b.name, cerr))
		}
	}()
	return run(ctx, b, o)
}

// openSQLite opens a new SQLite database in a temp dir; close removes the
// dir unless keep.
func openSQLite(ctx context.Context, keep bool) (*backend[*sql.Tx], error) {
	dir, err := os.MkdirTemp("", "ackgap-billing-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "billing.db")
	store, err := sqlitestore.Open(ctx, path, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	db := store.DB()
	location := path + ", removed at exit"
	if keep {
		location = path + ", kept"
	}
	return &backend[*sql.Tx]{
		name: "sqlite", location: location, store: store, outbox: store,
		db: appDB{
			exec: func(ctx context.Context, query string, args ...any) error {
				_, err := db.ExecContext(ctx, query, args...)
				return err
			},
			queryInt: func(ctx context.Context, query string) (n int64, err error) {
				err = db.QueryRowContext(ctx, query).Scan(&n)
				return n, err
			},
			placeholder: func(n int) string { return "?" + strconv.Itoa(n) },
		},
		close: func() error {
			err := store.Close()
			if !keep {
				err = errors.Join(err, os.RemoveAll(dir))
			}
			return err
		},
	}, nil
}

// openPostgres creates a fresh schema in the database dsn names and returns
// a store whose tables, and the orders table, live in it (the pool's
// search_path); close drops the schema unless keep. It touches nothing
// outside that schema.
func openPostgres(ctx context.Context, dsn string, maxConns int32, keep bool) (*backend[pgx.Tx], error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("dsn: %w", err)
	}
	schema := "billing_" + randomHex(6)
	ident := pgx.Identifier{schema}.Sanitize()
	if err := adminExec(ctx, cfg, "CREATE SCHEMA "+ident); err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return adminExec(ctx, cfg, "DROP SCHEMA "+ident+" CASCADE")
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = max(cfg.MaxConns, maxConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("pool: %w", err), drop())
	}
	store, err := pgxstore.New(pool, &pgxstore.Config{Schema: schema})
	if err != nil {
		pool.Close()
		return nil, errors.Join(err, drop())
	}
	where := fmt.Sprintf("schema %s in %s:%d/%s", schema, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	if keep {
		where += ", kept"
	} else {
		where += ", dropped at exit"
	}
	return &backend[pgx.Tx]{
		name: "postgres", location: where, store: store, outbox: store,
		db: appDB{
			exec: func(ctx context.Context, query string, args ...any) error {
				_, err := pool.Exec(ctx, query, args...)
				return err
			},
			queryInt: func(ctx context.Context, query string) (n int64, err error) {
				err = pool.QueryRow(ctx, query).Scan(&n)
				return n, err
			},
			placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		},
		close: func() error {
			pool.Close()
			if keep {
				return nil
			}
			return drop()
		},
	}, nil
}

// adminExec runs one statement on a connection of its own, outside the
// demo's pool (whose search_path is the schema being created or dropped).
func adminExec(ctx context.Context, cfg *pgxpool.Config, stmt string) error {
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
