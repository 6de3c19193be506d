package billingsim

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/mysqlstore"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// SoakChildEnv is the environment variable that makes a process a soak
// child: [Soak] starts its children with the JSON of their role in it,
// and [RunSoakChild] reads it.
const SoakChildEnv = "ACKGAP_SOAK_CHILD"

// Roles of a soak child.
const (
	roleConsumer = "consumer"
	roleRelay    = "relay"
)

// soakReady starts the one line a child writes to stdout once it runs,
// followed by the address of its stats endpoint.
const soakReady = "soak-child-ready "

// soakCloseTimeout is the routers' CloseTimeout in the soak, parent and
// children alike (Kafka's HoldTimeout is derived from it).
const soakCloseTimeout = 10 * time.Second

// soakChild is what a child process is told, as JSON in SoakChildEnv.
type soakChild struct {
	Role string
	// N numbers the child within its role; 0 is never killed.
	N int
	// Store is SoakStorePostgres (pgxstore; also when empty) or
	// SoakStoreMariaDB (mysqlstore).
	Store string
	// DSN, Schema and AppName locate the store. PostgreSQL: the pool's
	// search_path is Schema, its application_name AppName (the parent
	// counts the server's connections by it). MariaDB: DSN names the
	// soak's own database (Schema, the same name); AppName is unused.
	DSN, Schema, AppName string
	Broker               brokerSpec
	// ChargesURL and ReceiptsURL are the payment provider's and the
	// mailer's endpoints (relays).
	ChargesURL, ReceiptsURL string
}

// brokerSpec is what a consumer process needs to read the soak's topic or
// queue and to dead-letter: the parent's kafkaBroker or sqsBroker, as
// data.
type brokerSpec struct {
	Name string
	// Kafka.
	KafkaBrokers           []string
	Topic, Group, DLQTopic string
	HoldTimeout            time.Duration
	// SQS.
	SQSEndpoint, Queue, DLQ string
	// HandlerTimeout is the routers' handler timeout (0: the default).
	HandlerTimeout time.Duration
}

// spec describes k for a consumer process; cfg is the router
// configuration the parent opened it with.
func (k *kafkaBroker) spec(cfg *router.Config) brokerSpec {
	return brokerSpec{
		Name: BrokerKafka, KafkaBrokers: k.brokers, Topic: k.topic, Group: k.group, DLQTopic: k.dlqTopic,
		HoldTimeout: k.subCfg.HoldTimeout, HandlerTimeout: cfg.HandlerTimeout,
	}
}

// spec describes s for a consumer process; cfg is the router
// configuration the parent opened it with.
func (s *sqsBroker) spec(cfg *router.Config) brokerSpec {
	return brokerSpec{Name: BrokerSQS, SQSEndpoint: s.endpoint, Queue: s.queue, DLQ: s.dlq, HandlerTimeout: cfg.HandlerTimeout}
}

// open returns a subscriber of the soak's topic (Kafka: a member of its
// group) or queue, the topic it reads, the dead-letter publisher and
// topic, and a func that closes what the subscriber does not.
func (b *brokerSpec) open(ctx context.Context, logger watermill.LoggerAdapter) (sub message.Subscriber, topic string, dl message.Publisher, dlTopic string, closeFn func() error, err error) {
	switch b.Name {
	case BrokerKafka:
		pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: b.KafkaBrokers}, logger)
		if err != nil {
			return nil, "", nil, "", nil, err
		}
		sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{
			Brokers: b.KafkaBrokers, ConsumerGroup: b.Group, HoldTimeout: b.HoldTimeout,
			SessionTimeout: KafkaSessionTimeout, FetchMaxWait: KafkaFetchMaxWait, CloseTimeout: SubscriberCloseTimeout,
		}, logger)
		if err != nil {
			return nil, "", nil, "", nil, errors.Join(err, pub.Close())
		}
		return sub, b.Topic, pub, b.DLQTopic, pub.Close, nil
	case BrokerSQS:
		optFns, transport := sqsOptions(b.SQSEndpoint)
		dl, err := sqsbroker.NewDeadLetterPublisher(ctx, &sqsbroker.PublisherConfig{OptFns: optFns}, b.DLQ, logger)
		if err != nil {
			return nil, "", nil, "", nil, err
		}
		sub, err := sqsbroker.NewSubscriber(ctx, &sqsbroker.SubscriberConfig{
			OptFns: optFns, Queue: b.Queue, AttemptTimeout: SQSHandlerTimeout, CloseTimeout: SubscriberCloseTimeout,
		}, logger)
		if err != nil {
			return nil, "", nil, "", nil, errors.Join(err, dl.Close())
		}
		return sub, b.Queue, dl, router.DeadLetterTopicDefault, func() error {
			err := dl.Close()
			transport.CloseIdleConnections()
			return err
		}, nil
	default:
		return nil, "", nil, "", nil, fmt.Errorf("soak: broker %q runs in one process only", b.Name)
	}
}

// ResourceSample is one process's resources at one moment, as its stats
// endpoint reports them (after a garbage collection).
type ResourceSample struct {
	// Goroutines is runtime.NumGoroutine.
	Goroutines int `json:"goroutines"`
	// HeapBytes is the live heap (runtime.MemStats.HeapAlloc after
	// runtime.GC), in bytes.
	HeapBytes uint64 `json:"heap_bytes"`
	// PoolConns is the process's pool connections, idle and in use
	// (pgxpool's TotalConns; database/sql's OpenConnections on MariaDB).
	PoolConns int32 `json:"pool_conns"`
	// FDs is the number of open file descriptors (/proc/self/fd); -1
	// where that directory does not exist.
	FDs int `json:"fds"`
}

// RunSoakChild runs this process as a soak child when SoakChildEnv is
// set, and returns ran false at once otherwise. A program that runs
// [Soak] calls it first thing in main (a test binary, in TestMain) and
// exits with code when ran. The child (an ackgap router consuming the
// soak's topic or queue with orders.Handler on PostgreSQL or MariaDB, or an outbox
// relay carrying the rows out to the payment provider and the mailer)
// runs until SIGTERM or SIGINT, closes cleanly and returns 0, or 1 after
// writing its error to stderr.
func RunSoakChild() (ran bool, code int) {
	spec := os.Getenv(SoakChildEnv)
	if spec == "" {
		return false, 0
	}
	var c soakChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintf(os.Stderr, "soak child: %s: %v\n", SoakChildEnv, err)
		return true, 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := c.run(ctx, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "soak %s %d: %v\n", c.Role, c.N, err)
		return true, 1
	}
	return true, 0
}

// soakChildConns is a child's pool size: a consumer runs sqsbroker's
// workers (or one per Kafka partition it owns) and a concurrent copy; a
// relay a claim and a record.
const soakChildConns = sqsbroker.WorkersDefault + SoakPartitions + 2

// run opens the store, starts the role's worker and the stats endpoint,
// announces the endpoint on out, and runs until ctx ends.
func (c *soakChild) run(ctx context.Context, out io.Writer) (err error) {
	var poolConns func() int32
	var stop func() error
	switch c.Store {
	case SoakStoreMariaDB:
		store, err := mysqlstore.Open(ctx, c.DSN, &mysqlstore.Config{MaxOpenConns: soakChildConns})
		if err != nil {
			return err // names itself: "mysqlstore: open: ..."
		}
		defer store.Close()
		poolConns = func() int32 { return int32(store.DB().Stats().OpenConnections) }
		if stop, err = startSoakRole(ctx, c, store, orders.Handler[*sql.Tx]()); err != nil {
			return err
		}
	case SoakStorePostgres, "":
		cfg, err := pgxpool.ParseConfig(c.DSN)
		if err != nil {
			return fmt.Errorf("dsn: %w", err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = c.Schema
		cfg.ConnConfig.RuntimeParams["application_name"] = c.AppName
		cfg.MaxConns = max(cfg.MaxConns, int32(soakChildConns))
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return fmt.Errorf("pool: %w", err)
		}
		defer pool.Close()
		store, err := pgxstore.New(pool, &pgxstore.Config{Schema: c.Schema})
		if err != nil {
			return err
		}
		poolConns = func() int32 { return pool.Stat().TotalConns() }
		if stop, err = startSoakRole(ctx, c, store, orders.Handler[pgx.Tx]()); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown store %q", c.Store)
	}
	defer func() { err = errors.Join(err, stop()) }()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, sampleResources(poolConns))
	}), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(out, "%s%s\n", soakReady, ln.Addr()); err != nil {
		return errors.Join(err, srv.Close())
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// soakStore is what a soak child needs of its store: the handler path
// (consumers) and the outbox (relays).
type soakStore[TTx any] interface {
	stores.Store[TTx]
	stores.OutboxStore
}

// startSoakRole starts c's role on store (h is orders.Handler for the
// store's transaction type); stop stops it.
func startSoakRole[TTx any](ctx context.Context, c *soakChild, store soakStore[TTx], h router.HandlerFunc[TTx]) (stop func() error, err error) {
	switch c.Role {
	case roleConsumer:
		return startConsumer(ctx, c, store, h)
	case roleRelay:
		return c.startRelay(store)
	default:
		return nil, fmt.Errorf("unknown role %q", c.Role)
	}
}

// startConsumer starts a router with h (orders.Handler) on the soak's
// topic or queue, and returns once it runs; stop closes it.
func startConsumer[TTx any](ctx context.Context, c *soakChild, store stores.Store[TTx], h router.HandlerFunc[TTx]) (stop func() error, err error) {
	sub, topic, dl, dlTopic, closeBroker, err := c.Broker.open(ctx, watermill.NopLogger{})
	if err != nil {
		return nil, err
	}
	r, err := router.New(store, &router.Config{
		CloseTimeout: soakCloseTimeout, HandlerTimeout: c.Broker.HandlerTimeout,
		DeadLetter: dl, DeadLetterTopic: dlTopic, Logger: watermill.NopLogger{},
	})
	if err == nil {
		err = r.AddHandler(orders.Consumer, topic, sub, h)
	}
	if err != nil {
		return nil, errors.Join(err, sub.Close(), closeBroker())
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.WithoutCancel(ctx)) }() // stopped by Close
	select {
	case <-r.Running():
	case err := <-done:
		return nil, errors.Join(fmt.Errorf("router stopped at start: %w", err), closeBroker())
	}
	return func() error {
		err := r.Close()
		return errors.Join(err, <-done, closeBroker())
	}, nil
}

// startRelay starts an outbox relay whose effects call the payment
// provider and the mailer; stop stops it.
func (c *soakChild) startRelay(store stores.OutboxStore) (stop func() error, err error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = RelayConcurrency
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	r, err := outbox.New(store, &outbox.Config{
		Effects: map[string]outbox.Effect{
			orders.KindCharge:  outbox.HTTP(client, c.ChargesURL),
			orders.KindReceipt: outbox.HTTP(client, c.ReceiptsURL),
		},
		Concurrency: RelayConcurrency, Lease: SoakRelayLease, PollInterval: RelayPollInterval,
		RetryInitialInterval: RelayRetryInitial, RetryMaxInterval: RelayRetryMax,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() error {
		cancel()
		err := <-done
		transport.CloseIdleConnections()
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}, nil
}

// sampleResources reads this process's resources; poolConns counts its
// pool's connections.
func sampleResources(poolConns func() int32) ResourceSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds := -1
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		fds = len(ents) - 1 // less the descriptor ReadDir read them with
	}
	return ResourceSample{Goroutines: runtime.NumGoroutine(), HeapBytes: ms.HeapAlloc, PoolConns: poolConns(), FDs: fds}
}
