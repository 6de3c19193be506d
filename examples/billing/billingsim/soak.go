package billingsim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/router"
)

// Defaults and fixed settings of [Soak].
const (
	// SoakConsumersDefault is the number of consumer processes
	// (SoakConfig.Consumers); the first is never killed.
	SoakConsumersDefault = 3
	// SoakRelaysDefault is the number of relay processes
	// (SoakConfig.Relays); the first is never killed.
	SoakRelaysDefault = 2
	// SoakKillEveryDefault is the time between two kills
	// (SoakConfig.KillEvery).
	SoakKillEveryDefault = 3 * time.Second
	// SoakRateDefault is the events published per second
	// (SoakConfig.Rate).
	SoakRateDefault = 100
	// SoakDrainTimeoutDefault bounds the wait, once the kills stopped, for
	// every event to be applied and every outbox row carried out
	// (SoakConfig.DrainTimeout).
	SoakDrainTimeoutDefault = 3 * time.Minute
	// SoakPartitions is the Kafka topic's partitions.
	SoakPartitions = 6
	// SoakRelayLease is the relays' lease: a killed relay's claimed rows
	// are carried out again by another after it.
	SoakRelayLease = 5 * time.Second
	// SoakDupEvery makes every SoakDupEvery-th event published twice at
	// once (on Kafka, the copy to another partition).
	SoakDupEvery = 10
	// soakStartTimeout bounds a child's start, until it reports ready.
	soakStartTimeout = time.Minute
	// soakStopTimeout is how long a child gets to exit after SIGTERM
	// before it is killed.
	soakStopTimeout = 30 * time.Second
	// soakWarmEvents is how many events must be applied before the start
	// figures are taken: pools filled, statements prepared.
	soakWarmEvents = 100
)

// Stores of [Soak], as [SoakReport.Store] names them; SoakConfig.DSN's
// form chooses one.
const (
	// SoakStorePostgres is PostgreSQL (pgxstore).
	SoakStorePostgres = "postgres"
	// SoakStoreMariaDB is MariaDB or MySQL (mysqlstore).
	SoakStoreMariaDB = "mariadb"
)

// SoakConfig configures [Soak].
type SoakConfig struct {
	// Duration is how long events are published while consumers and
	// relays are killed and restarted; positive, required.
	Duration time.Duration
	// Broker is BrokerKafka (the default when empty) or BrokerSQS.
	Broker string
	// KafkaBrokers are the Kafka bootstrap addresses. Empty means
	// KafkaBrokersDefault.
	KafkaBrokers []string
	// SQSEndpoint is the SQS endpoint URL. Empty means SQSEndpointDefault.
	SQSEndpoint string
	// DSN is the PostgreSQL database, where the soak works in a schema
	// of its own, or a MariaDB/MySQL server (a mysql:// or mariadb:// URL
	// or the driver's user@tcp(host:port)/db form, see
	// mysqlstore.ParseDSN), where it works in a database of its own; the
	// schema or database is dropped at the end. Required.
	DSN string
	// Consumers is the number of consumer processes (router instances of
	// consumer "billing"). Zero means SoakConsumersDefault (3); at least
	// 2, as the first is never killed.
	Consumers int
	// Relays is the number of outbox relay processes. Zero means
	// SoakRelaysDefault (2); at least 2, as the first is never killed.
	Relays int
	// KillEvery is the time between two SIGKILLs, each of a consumer or
	// a relay other than the first, chosen at random and restarted at
	// once. Zero means SoakKillEveryDefault (3 s).
	KillEvery time.Duration
	// Rate is the events published per second. Zero means
	// SoakRateDefault (100).
	Rate int
	// DrainTimeout bounds the wait for the pipeline to drain after
	// Duration. Zero means SoakDrainTimeoutDefault (3 min).
	DrainTimeout time.Duration
	// Seed picks whom to kill. Zero means SeedDefault (1).
	Seed uint64
	// Executable starts a child; it must call [RunSoakChild] first thing
	// (a test binary: in TestMain). Empty means os.Executable().
	Executable string
	// Log receives progress lines and the children's stderr. Nil
	// discards them.
	Log io.Writer
}

func (c SoakConfig) withDefaults() (SoakConfig, error) {
	if c.Broker == "" {
		c.Broker = BrokerKafka
	}
	if len(c.KafkaBrokers) == 0 {
		c.KafkaBrokers = []string{KafkaBrokersDefault}
	}
	if c.SQSEndpoint == "" {
		c.SQSEndpoint = SQSEndpointDefault
	}
	if c.Consumers == 0 {
		c.Consumers = SoakConsumersDefault
	}
	if c.Relays == 0 {
		c.Relays = SoakRelaysDefault
	}
	if c.KillEvery == 0 {
		c.KillEvery = SoakKillEveryDefault
	}
	if c.Rate == 0 {
		c.Rate = SoakRateDefault
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = SoakDrainTimeoutDefault
	}
	if c.Seed == 0 {
		c.Seed = SeedDefault
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("soak: executable: %w", err)
		}
		c.Executable = exe
	}
	var errs []error
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration is %s, must be positive", c.Duration))
	}
	if c.Broker != BrokerKafka && c.Broker != BrokerSQS {
		errs = append(errs, fmt.Errorf("broker is %q, must be %s or %s (the consumers are other processes)", c.Broker, BrokerKafka, BrokerSQS))
	}
	if c.DSN == "" {
		errs = append(errs, errors.New("dsn is empty: the soak needs PostgreSQL or MariaDB"))
	}
	if c.Consumers < 2 || c.Relays < 2 {
		errs = append(errs, fmt.Errorf("consumers (%d) and relays (%d) must be at least 2: the first of each is never killed", c.Consumers, c.Relays))
	}
	if c.KillEvery < 0 || c.Rate < 0 || c.DrainTimeout < 0 {
		errs = append(errs, errors.New("kill-every, rate and drain-timeout must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid soak config: %w", err)
	}
	return c, nil
}

// SoakReport is what [Soak] measured and checked.
type SoakReport struct {
	// Broker names the broker; Store the database (SoakStorePostgres or
	// SoakStoreMariaDB); Where says where the topic or queue and the
	// PostgreSQL schema or MariaDB database were.
	Broker, Store, Where string
	// Duration is the time events were published and processes killed;
	// Drained the wait afterwards until everything was carried out.
	Duration, Drained time.Duration
	// Events is the number of orders and events; Copies the messages
	// published (events plus the concurrent copies).
	Events, Copies int
	// Consumers and Relays are the processes of each role; KilledConsumers
	// and KilledRelays the SIGKILLs each role took (each followed by a
	// restart).
	Consumers, Relays                      int
	KilledConsumers, KilledRelays          int
	SteadyConsumerStart, SteadyConsumerEnd ResourceSample
	SteadyRelayStart, SteadyRelayEnd       ResourceSample
	// DBConnsStart and DBConnsEnd count the server's connections of the
	// consumer and relay processes: on PostgreSQL pg_stat_activity by
	// application_name; on MariaDB information_schema.PROCESSLIST by the
	// soak's database, less the connections of this process's own pool.
	DBConnsStart, DBConnsEnd int64
	// TableBytesStart and TableBytesEnd are the size of the soak's tables
	// (orders, inbox, outbox, and the store's others), data and indexes,
	// in bytes: pg_total_relation_size on PostgreSQL,
	// information_schema.TABLES' data_length + index_length on MariaDB
	// (InnoDB's estimate, in pages).
	TableBytesStart, TableBytesEnd int64
	// Invariants, read back once drained.
	OrdersMoved, OrdersMovedTwice, OrdersNotMoved int64
	InboxRows                                     int64
	OutboxRows, OutboxDone, OutboxDead            int
	OutboxBadOrders, OutboxStray                  int
	ChargesMade, ChargeConflicts, ReceiptsSent    int
	ChargesAttempted, ReceiptCalls                int
}

// Check returns an error listing every invariant the soak broke: each
// event applied once (every order moved exactly once, one inbox row per
// event), each effect once per key (exactly one charge and one receipt
// row per order, each carried out, the provider charging each order once
// and the mailer sending one receipt each), nothing lost.
func (r *SoakReport) Check() error {
	var errs []error
	n := int64(r.Events)
	if r.OrdersMoved != n || r.OrdersMovedTwice != 0 || r.OrdersNotMoved != 0 {
		errs = append(errs, fmt.Errorf("orders: %d moved once, %d moved twice, %d not moved; want %d, 0, 0", r.OrdersMoved, r.OrdersMovedTwice, r.OrdersNotMoved, n))
	}
	if r.InboxRows != n {
		errs = append(errs, fmt.Errorf("inbox rows: %d, want one per event: %d", r.InboxRows, n))
	}
	if r.OutboxRows != 2*r.Events || r.OutboxDone != r.OutboxRows || r.OutboxDead != 0 || r.OutboxBadOrders != 0 || r.OutboxStray != 0 {
		errs = append(errs, fmt.Errorf("outbox: %d rows (want %d), %d done, %d dead, %d orders without exactly one charge and one receipt, %d stray",
			r.OutboxRows, 2*r.Events, r.OutboxDone, r.OutboxDead, r.OutboxBadOrders, r.OutboxStray))
	}
	if r.ChargesMade != r.Events || r.ChargeConflicts != 0 || r.ReceiptsSent != r.Events {
		errs = append(errs, fmt.Errorf("effects: %d charges made, %d key conflicts, %d receipts sent; want %d, 0, %d", r.ChargesMade, r.ChargeConflicts, r.ReceiptsSent, r.Events, r.Events))
	}
	return errors.Join(errs...)
}

// storeTitle is the name of store (SoakStorePostgres when empty) as the
// report writes it.
func storeTitle(store string) string {
	if store == SoakStoreMariaDB {
		return "MariaDB"
	}
	return "PostgreSQL"
}

// Markdown returns the report as a markdown section: the run, the
// resources of the never-killed consumer and relay and the database's
// connections at start and end, and the invariants.
func (r *SoakReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Soak on %s and %s (%s): %s of publishing after the warm-up (%d events, %d messages with the concurrent copies) while %d consumer and %d relay processes were SIGKILLed and restarted (%d and %d kills); drained %s later.\n\n",
		r.Broker, storeTitle(r.Store), r.Where, r.Duration.Round(time.Second), r.Events, r.Copies, r.Consumers-1, r.Relays-1, r.KilledConsumers, r.KilledRelays, r.Drained.Round(100*time.Millisecond))
	b.WriteString("| process | goroutines | heap (MiB, after GC) | pool conns | open fds |\n|---|---|---|---|---|\n")
	row := func(name string, s, e ResourceSample) {
		mib := func(v uint64) string { return fmt.Sprintf("%.1f", float64(v)/(1<<20)) }
		fmt.Fprintf(&b, "| %s | %d -> %d | %s -> %s | %d -> %d | %d -> %d |\n", name,
			s.Goroutines, e.Goroutines, mib(s.HeapBytes), mib(e.HeapBytes), s.PoolConns, e.PoolConns, s.FDs, e.FDs)
	}
	row("consumer 0 (never killed)", r.SteadyConsumerStart, r.SteadyConsumerEnd)
	row("relay 0 (never killed)", r.SteadyRelayStart, r.SteadyRelayEnd)
	conns := "PostgreSQL connections of all soak processes"
	if r.Store == SoakStoreMariaDB {
		conns = "MariaDB connections of all soak processes (PROCESSLIST)"
	}
	fmt.Fprintf(&b, "| %s | | | %d -> %d | |\n\n", conns, r.DBConnsStart, r.DBConnsEnd)
	fmt.Fprintf(&b, "Tables (orders, inbox, outbox; data and indexes): %.1f MiB at the start, %.1f MiB at the end.\n\n",
		float64(r.TableBytesStart)/(1<<20), float64(r.TableBytesEnd)/(1<<20))
	fmt.Fprintf(&b, "Invariants: %d/%d orders moved once (%d twice, %d not); %d inbox rows; %d outbox rows, %d done, %d dead, %d orders without exactly one charge and one receipt; %d charges made in %d calls (%d key conflicts); %d receipts sent in %d calls.",
		r.OrdersMoved, r.Events, r.OrdersMovedTwice, r.OrdersNotMoved, r.InboxRows, r.OutboxRows, r.OutboxDone, r.OutboxDead, r.OutboxBadOrders,
		r.ChargesMade, r.ChargesAttempted, r.ChargeConflicts, r.ReceiptsSent, r.ReceiptCalls)
	if err := r.Check(); err != nil {
		fmt.Fprintf(&b, " **FAILED**: %v\n", err)
	} else {
		b.WriteString(" All hold.\n")
	}
	return b.String()
}

// Soak runs the billing pipeline as real processes for cfg.Duration:
// consumer processes (ackgap routers with orders.Handler, one consumer
// group on Kafka, competing consumers on SQS) and outbox relay processes,
// on PostgreSQL or MariaDB (cfg.DSN), while this process publishes cfg.Rate events a second
// (every SoakDupEvery-th twice at once) and SIGKILLs a consumer or a relay
// every cfg.KillEvery, restarting it at once (on Kafka a consumer is
// killed once the group is stable again). The first consumer and the
// first relay are never killed: their goroutines, heap, pool connections
// and file descriptors are sampled once soakWarmEvents events were applied
// (cfg.Duration starts then, so a duration longer than cfg.KillEvery
// kills at least once) and again once everything drained, with the server's connections of all
// soak processes. Then it reads the invariants back (see
// [SoakReport.Check]). The error means the soak could not run; whether it
// ran correctly is the report's Check.
func Soak(ctx context.Context, cfg SoakConfig) (rep *SoakReport, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(cfg.Log, "[soak] "+format+"\n", args...)
	}
	b, err := openSoakDB(ctx, cfg.DSN)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := b.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", b.store, cerr))
		}
	}()
	svc, err := startServices()
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := svc.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close services: %w", cerr))
		}
	}()
	rcfg := router.Config{CloseTimeout: soakCloseTimeout}
	br, err := openBroker(ctx, Options{
		Broker: cfg.Broker, KafkaBrokers: cfg.KafkaBrokers, SQSEndpoint: cfg.SQSEndpoint, Partitions: SoakPartitions,
	}.WithDefaults(), &rcfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := br.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close broker %s: %w", br.name(), cerr))
		}
	}()
	var spec brokerSpec
	switch rb := br.(type) {
	case *kafkaBroker:
		spec = rb.spec(&rcfg)
	case *sqsBroker:
		spec = rb.spec(&rcfg)
	}
	s := &soaker{
		cfg: cfg, logf: logf, log: &lockedWriter{w: cfg.Log}, procs: map[string]*soakProc{}, died: make(chan error, 1),
		child: soakChild{Store: b.store, DSN: b.childDSN, Schema: b.schema, AppName: "ackgap-soak-" + b.schema, Broker: spec, ChargesURL: svc.chargesURL, ReceiptsURL: svc.receiptsURL},
	}
	defer func() { err = errors.Join(err, s.stopAll()) }()
	for n := range cfg.Consumers {
		if err := s.spawn(roleConsumer, n); err != nil {
			return nil, err
		}
	}
	for n := range cfg.Relays {
		if err := s.spawn(roleRelay, n); err != nil {
			return nil, err
		}
	}
	if err := br.ready(ctx, cfg.Consumers); err != nil {
		return nil, err
	}
	logf("%d consumers and %d relays running on %s, %s", cfg.Consumers, cfg.Relays, br.location(), b.location)

	rep = &SoakReport{Broker: br.name(), Store: b.store, Where: br.location() + "; " + b.location, Consumers: cfg.Consumers, Relays: cfg.Relays}
	var sent []event
	var pubErr error
	var sentMu sync.Mutex
	pubCtx, stopPub := context.WithCancel(ctx)
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		err := s.publish(pubCtx, br, b.db, func(evs []event, copies int) {
			sentMu.Lock()
			sent = append(sent, evs...)
			rep.Copies += copies
			sentMu.Unlock()
		})
		if pubCtx.Err() == nil {
			pubErr = err // not stopped: it failed
		}
	}()
	defer func() {
		stopPub()
		<-pubDone
	}()

	// The start figures, once the pipeline is warm; the clock starts
	// then.
	if err := s.waitFor(ctx, b.db, time.Minute, "warm-up", func(moved, _ int64) bool { return moved >= soakWarmEvents }); err != nil {
		return nil, err
	}
	if rep.SteadyConsumerStart, rep.SteadyRelayStart, rep.DBConnsStart, err = s.sample(ctx, b); err != nil {
		return nil, err
	}
	if rep.TableBytesStart, err = b.tableBytes(ctx); err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	logf("start: consumer 0 %+v, relay 0 %+v, %d connections", rep.SteadyConsumerStart, rep.SteadyRelayStart, rep.DBConnsStart)
	started := time.Now()

	rng := rand.New(rand.NewPCG(cfg.Seed, 0x736f616b))
	kill := time.NewTicker(cfg.KillEvery)
	defer kill.Stop()
	end := time.NewTimer(cfg.Duration)
	defer end.Stop()
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
loop:
	for {
		select {
		case <-kill.C:
			role, n := roleConsumer, 1+rng.IntN(cfg.Consumers-1)
			if rng.IntN(cfg.Consumers+cfg.Relays-2) >= cfg.Consumers-1 {
				role, n = roleRelay, 1+rng.IntN(cfg.Relays-1)
			}
			if role == roleConsumer && cfg.Broker == BrokerKafka {
				// Kill a member only once the group is stable: on kfake a
				// member killed while a rebalance waits for it holds the
				// group for the rebalance timeout (kafkabroker's
				// HoldTimeout + CommitMargin, minutes), each member that
				// joins meanwhile starts that wait again, and Sarama's
				// JoinGroup gives up after Net.ReadTimeout (30 s) and
				// joins again: the group never settles.
				if err := br.ready(ctx, cfg.Consumers); err != nil {
					return nil, fmt.Errorf("before killing %s %d: %w", role, n, err)
				}
			}
			if err := s.killAndRestart(role, n); err != nil {
				return nil, err
			}
			if role == roleConsumer {
				rep.KilledConsumers++
			} else {
				rep.KilledRelays++
			}
		case <-progress.C:
			moved, backlog, _ := s.counts(ctx, b.db)
			sentMu.Lock()
			logf("%s: %d events published, %d applied, %d outbox rows to carry out, %d consumer and %d relay kills",
				time.Since(started).Round(time.Second), len(sent), moved, backlog, rep.KilledConsumers, rep.KilledRelays)
			sentMu.Unlock()
		case <-end.C:
			break loop
		case <-pubDone:
			return nil, fmt.Errorf("publish: %w", pubErr)
		case err := <-s.died:
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	stopPub()
	<-pubDone
	if pubErr != nil {
		return nil, fmt.Errorf("publish: %w", pubErr)
	}
	rep.Duration = time.Since(started)
	rep.Events = len(sent)
	logf("publishing stopped after %s: %d events; draining", rep.Duration.Round(time.Second), rep.Events)
	drainStart := time.Now()
	want := int64(rep.Events)
	if err := s.waitFor(ctx, b.db, cfg.DrainTimeout, "drain", func(moved, backlog int64) bool { return moved >= want && backlog == 0 }); err != nil {
		return nil, err
	}
	rep.Drained = time.Since(drainStart)
	if rep.SteadyConsumerEnd, rep.SteadyRelayEnd, rep.DBConnsEnd, err = s.sample(ctx, b); err != nil {
		return nil, err
	}
	if rep.TableBytesEnd, err = b.tableBytes(ctx); err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	logf("end: consumer 0 %+v, relay 0 %+v, %d connections", rep.SteadyConsumerEnd, rep.SteadyRelayEnd, rep.DBConnsEnd)

	oc, err := countOrders(ctx, b.db)
	if err != nil {
		return nil, err
	}
	rep.OrdersMoved, rep.OrdersMovedTwice, rep.OrdersNotMoved = oc.moved, oc.movedTwice, oc.notMoved
	if rep.InboxRows, err = b.db.queryInt(ctx, `SELECT count(*) FROM ackgap_inbox`); err != nil {
		return nil, fmt.Errorf("count inbox rows: %w", err)
	}
	ob, err := countOutbox(ctx, b.outbox, sent)
	if err != nil {
		return nil, err
	}
	rep.OutboxRows, rep.OutboxDone, rep.OutboxDead, rep.OutboxBadOrders, rep.OutboxStray = ob.rows, ob.done, ob.dead, ob.badOrders, ob.stray
	pc := svc.provider.counts()
	rep.ChargesMade, rep.ChargeConflicts, rep.ChargesAttempted = pc.charged, pc.conflicts, pc.calls
	rep.ReceiptCalls, rep.ReceiptsSent = svc.mailer.counts()
	return rep, nil
}

// soaker runs the soak's child processes.
type soaker struct {
	cfg   SoakConfig
	logf  func(format string, args ...any)
	log   io.Writer
	child soakChild

	mu    sync.Mutex
	procs map[string]*soakProc
	// died receives the error of a child that exited on its own.
	died chan error
}

// soakProc is one running child process.
type soakProc struct {
	role   string
	n      int
	cmd    *exec.Cmd
	stats  string // the stats endpoint's URL
	killed bool   // by the soak: its exit is expected
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

func procKey(role string, n int) string { return fmt.Sprintf("%s %d", role, n) }

// spawn starts child role n and waits until it reports ready.
func (s *soaker) spawn(role string, n int) error {
	c := s.child
	c.Role, c.N = role, n
	spec, err := json.Marshal(c)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.cfg.Executable)
	cmd.Env = append(os.Environ(), SoakChildEnv+"="+string(spec))
	cmd.Stderr = s.log
	cmd.SysProcAttr = childProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s %d: %w", role, n, err)
	}
	p := &soakProc{role: role, n: n, cmd: cmd, exited: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			ready <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.err = cmd.Wait() // after the last read, as os/exec asks
		close(p.exited)
		s.mu.Lock()
		expected := p.killed
		s.mu.Unlock()
		if !expected {
			select {
			case s.died <- fmt.Errorf("%s %d exited on its own: %v", role, n, p.err):
			default:
			}
		}
	}()
	select {
	case line := <-ready:
		addr, ok := strings.CutPrefix(line, soakReady)
		if !ok {
			s.kill(p)
			return fmt.Errorf("%s %d: unexpected first line %q", role, n, line)
		}
		p.stats = "http://" + addr + "/"
	case <-p.exited:
		return fmt.Errorf("%s %d exited at start: %v", role, n, p.err)
	case <-time.After(soakStartTimeout):
		s.kill(p)
		return fmt.Errorf("%s %d not ready after %s", role, n, soakStartTimeout)
	}
	s.mu.Lock()
	s.procs[procKey(role, n)] = p
	s.mu.Unlock()
	return nil
}

// kill sends p SIGKILL and waits until it exited.
func (s *soaker) kill(p *soakProc) {
	s.mu.Lock()
	p.killed = true
	s.mu.Unlock()
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// killAndRestart SIGKILLs child role n and starts it again.
func (s *soaker) killAndRestart(role string, n int) error {
	s.mu.Lock()
	p := s.procs[procKey(role, n)]
	delete(s.procs, procKey(role, n))
	s.mu.Unlock()
	s.kill(p)
	return s.spawn(role, n)
}

// stopAll sends every child SIGTERM and waits for it, SIGKILL after
// soakStopTimeout; it returns the errors of children that did not exit
// cleanly.
func (s *soaker) stopAll() error {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	for _, p := range procs {
		p.killed = true
	}
	s.mu.Unlock()
	var errs []error
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.exited:
			if p.err != nil {
				errs = append(errs, fmt.Errorf("%s %d: %w", p.role, p.n, p.err))
			}
		case <-time.After(soakStopTimeout):
			_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
			errs = append(errs, fmt.Errorf("%s %d did not exit within %s of SIGTERM: killed", p.role, p.n, soakStopTimeout))
		}
	}
	return errors.Join(errs...)
}

// sample reads the resources of consumer 0 and relay 0, and counts the
// server's connections of the soak's processes.
func (s *soaker) sample(ctx context.Context, db *soakDB) (consumer, relay ResourceSample, conns int64, err error) {
	s.mu.Lock()
	c, r := s.procs[procKey(roleConsumer, 0)], s.procs[procKey(roleRelay, 0)]
	s.mu.Unlock()
	if consumer, err = fetchSample(ctx, c.stats); err != nil {
		return
	}
	if relay, err = fetchSample(ctx, r.stats); err != nil {
		return
	}
	conns, err = db.childConns(ctx)
	return
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func fetchSample(ctx context.Context, url string) (ResourceSample, error) {
	var rs ResourceSample
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return rs, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rs, fmt.Errorf("stats %s: %w", url, err)
	}
	defer resp.Body.Close()
	return rs, json.NewDecoder(resp.Body).Decode(&rs)
}

// counts returns the orders moved and the outbox rows not yet carried
// out (pending or claimed).
func (s *soaker) counts(ctx context.Context, db appDB) (moved, backlog int64, err error) {
	if moved, err = db.queryInt(ctx, `SELECT count(*) FROM orders WHERE status = 'charging'`); err != nil {
		return 0, 0, err
	}
	backlog, err = db.queryInt(ctx, `SELECT count(*) FROM ackgap_outbox WHERE state IN ('pending', 'claimed')`)
	return moved, backlog, err
}

// waitFor polls counts until cond holds, a child dies, or timeout.
func (s *soaker) waitFor(ctx context.Context, db appDB, timeout time.Duration, what string, cond func(moved, backlog int64) bool) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var moved, backlog int64
	for {
		var err error
		moved, backlog, err = s.counts(ctx, db)
		if err != nil {
			return err
		}
		if cond(moved, backlog) {
			return nil
		}
		select {
		case <-tick.C:
		case err := <-s.died:
			return err
		case <-deadline:
			return fmt.Errorf("%s: timed out after %s: %d orders moved, %d outbox rows not carried out", what, timeout, moved, backlog)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// publish is the producer: every 100 ms it inserts the next Rate/10
// orders and publishes their events, every SoakDupEvery-th twice at once,
// and calls sent with them, until ctx ends.
func (s *soaker) publish(ctx context.Context, br demoBroker, db appDB, sent func(evs []event, copies int)) error {
	const tick = 100 * time.Millisecond
	per := max(1, s.cfg.Rate/10)
	t := time.NewTicker(tick)
	defer t.Stop()
	next := 0
	for {
		evs := make([]event, per)
		for i := range evs {
			next++
			body := orders.OrderPlaced{
				OrderID:     fmt.Sprintf("soak-%08d", next),
				AmountCents: int64(500 + (next*7919)%99500),
				Email:       fmt.Sprintf("customer%08d@example.com", next),
			}
			payload, err := json.Marshal(body)
			if err != nil {
				return err
			}
			evs[i] = event{body: body, id: orders.EventID(body.OrderID), partition: partitionOf(body.OrderID, SoakPartitions), payload: payload}
		}
		// Not on ctx: a stop that cancelled the insert after it committed
		// left orders that were never published, which the check then
		// counted as not moved (seen once under load). The tick's orders
		// are inserted and published whole; ctx is looked at between ticks.
		insCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		err := insertOrders(insCtx, db, evs)
		cancel()
		if err != nil {
			return err
		}
		copies := 0
		for i := range evs {
			if err := br.publish(&evs[i], false); err != nil {
				return err
			}
			copies++
			if (next-per+i+1)%SoakDupEvery == 0 {
				if err := br.publish(&evs[i], true); err != nil {
					return err
				}
				copies++
			}
		}
		sent(evs, copies)
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
