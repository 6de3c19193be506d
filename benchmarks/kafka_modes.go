package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/outbox"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// The Kafka ordering modes comparison (issue #11): publish -> effect on
// Kafka with PostgreSQL, 4 partitions, 1,000 keys, six consumers side by
// side, the provider answering at once and after 20 ms, runs alternating
// between the modes. `go run ./benchmarks -kafka-modes`.

// The consumers compared.
const (
	modeUnsafe    = "unsafe-inline"
	modeHandSafe  = "hand-safe"
	modePerMsg    = "ackgap per-message"
	modeParallel  = "ackgap key-parallel"
	modeBatched   = "ackgap batched"
	modeGroup     = "ackgap group-commit"
	kmPartitions  = 4
	kmKeys        = 1000
	kmConsumer    = "billing"
	kmHandClaim   = 50 // the hand-written relay's claim size
	kmPollEvery   = 10 * time.Millisecond
	kmRunTimeout  = 5 * time.Minute
	kmPublishSize = 200 // records per produce request
)

var kmModes = []string{modeUnsafe, modeHandSafe, modePerMsg, modeParallel, modeGroup, modeBatched}

// kmOptions are the comparison's flags.
type kmOptions struct {
	on      bool
	events  int
	runs    int
	delays  []time.Duration
	hotKey  bool
	modes   []string // the modes to run, in kmModes order by default
	brokers []string
	dsn     string
	// store is -kafka-modes-store: kmStorePostgres ("" too) or
	// kmStoreMariaDB, whose server is mariaDSN.
	store    string
	mariaDSN string
}

// kmResult is one run of one mode.
type kmResult struct {
	mode    string
	delay   time.Duration
	hot     bool
	events  int
	elapsed time.Duration
	// CPU during the run: this process (consumer, producer, provider),
	// the PostgreSQL backends of the consumer's pool and of the relay's,
	// kfake.
	cpuSelf, cpuPG, cpuRelayPG, cpuBroker time.Duration
	// ackGaps are commit -> broker confirmed per applied message (ackgap
	// modes only).
	ackGaps     []time.Duration
	unconfirmed int64
	// leaseHeadrooms are lease deadline - delete answered per acked
	// message (SQS ackgap modes only; negative: answered after the lease
	// ran out).
	leaseHeadrooms []time.Duration
	// sqsCalls are the SQS requests of the run by operation, sql and
	// relaySQL the round trips of the consumer's pool and of the relay's,
	// sqlStatements and relaySQLStatements their statements (SQS modes
	// only).
	sqsCalls                                         map[string]int64
	sql, relaySQL, sqlStatements, relaySQLStatements int64
	// Checks.
	orderOK, onceOK, effectsOK bool
	why                        string
}

func (r *kmResult) rate() float64 { return float64(r.events) / r.elapsed.Seconds() }
func (r *kmResult) correct() bool { return r.orderOK && r.onceOK && r.effectsOK }

// kmEnv is what every run shares: the database pool, kfake's admin client
// and pid, the provider.
type kmEnv struct {
	o    kmOptions
	pool *pgxpool.Pool
	// relayPool serves the relays (ackgap's and the hand-written one), so
	// that the database's CPU splits into consumer and relay.
	relayPool  *pgxpool.Pool
	relayStore *pgxstore.Store
	schema     string
	store      *pgxstore.Store
	admin      sarama.ClusterAdmin
	brokerID   int
	prov       *kmProvider
	// relayPoll is ackgap's relay's PollInterval; zero means kmPollEvery.
	relayPoll time.Duration
	// dead counts the messages ackgap's modes dead-lettered in this run:
	// a guarded step refused (out of order) is one.
	dead deadLetters
	// my is the database when -kafka-modes-store is mariadb; the pools
	// and stores above are then nil.
	my *kmMaria
	// sqlCalls and relaySQLCalls count the round trips of pool and
	// relayPool (PostgreSQL only).
	sqlCalls, relaySQLCalls *sqlCalls
}

// deadLetters is a dead-letter publisher that counts what it is given.
type deadLetters struct{ n atomic.Int64 }

// Publish counts msgs.
func (d *deadLetters) Publish(_ string, msgs ...*message.Message) error {
	d.n.Add(int64(len(msgs)))
	return nil
}

// Close does nothing.
func (d *deadLetters) Close() error { return nil }

// runKafkaModes runs the comparison and returns its markdown.
func runKafkaModes(ctx context.Context, o kmOptions, progress io.Writer) (string, error) {
	started := time.Now()
	loadBefore := loadAverage()
	env, err := openKMEnv(ctx, o)
	if err != nil {
		return "", err
	}
	defer env.close()
	type cell struct {
		mode  string
		delay time.Duration
		hot   bool
	}
	var cells []cell
	for _, d := range o.delays {
		for _, m := range o.modes {
			cells = append(cells, cell{m, d, false})
		}
	}
	if o.hotKey {
		for _, m := range o.modes {
			cells = append(cells, cell{m, 0, true})
		}
	}
	var results []*kmResult
	total := len(cells) * o.runs
	for run := range o.runs {
		for _, c := range cells {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			res, err := env.run(ctx, c.mode, c.delay, c.hot)
			if err != nil {
				return "", fmt.Errorf("%s (provider %s, hot %v) run %d: %w", c.mode, c.delay, c.hot, run+1, err)
			}
			results = append(results, res)
			mark := "ok"
			if !res.correct() {
				mark = "NOT CORRECT: " + res.why
			}
			fmt.Fprintf(progress, "[%3d/%d %6.1fs] %-20s provider %-5s hot=%-5v %7.0f events/s  %s\n", len(results), total,
				time.Since(started).Seconds(), c.mode, c.delay, c.hot, res.rate(), mark)
		}
	}
	return kmMarkdown(o, results, time.Since(started), loadBefore, loadAverage()), nil
}

func openKMEnv(ctx context.Context, o kmOptions) (*kmEnv, error) {
	var env *kmEnv
	var err error
	if o.store == kmStoreMariaDB {
		env = &kmEnv{o: o}
		env.my, err = openKMMaria(ctx, o.mariaDSN)
	} else {
		env, err = openKMPostgres(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	if len(o.brokers) > 0 { // the SQS modes comparison shares the rest without Kafka
		sc := sarama.NewConfig()
		sc.Version = kafkabroker.VersionDefault
		if env.admin, err = sarama.NewClusterAdmin(o.brokers, sc); err != nil {
			env.close()
			return nil, fmt.Errorf("kafka %s: %w", o.brokers[0], err)
		}
		env.brokerID = brokerProcess("kfake", o.brokers[0])
		if env.brokerID == 0 {
			env.brokerID = kfakeListening(o.brokers[0])
		}
	}
	if env.prov, err = startKMProvider(); err != nil {
		env.close()
		return nil, err
	}
	return env, nil
}

// openKMPostgres creates the comparison's schema, pools and stores on
// PostgreSQL.
func openKMPostgres(ctx context.Context, o kmOptions) (*kmEnv, error) {
	cfg, err := pgxpool.ParseConfig(o.dsn)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	env := &kmEnv{o: o, schema: "ackgap_kmodes_" + hex.EncodeToString(b)}
	admin, err := pgx.Connect(ctx, o.dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+env.schema)
	_ = admin.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = env.schema
	cfg.ConnConfig.RuntimeParams["application_name"] = "ackgap-benchmarks-kafka-modes"
	cfg.MaxConns = 24
	env.sqlCalls, env.relaySQLCalls = new(sqlCalls), new(sqlCalls)
	cfg.ConnConfig.Tracer = env.sqlCalls
	if env.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		env.close()
		return nil, err
	}
	if env.store, err = pgxstore.New(env.pool, nil); err != nil {
		env.close()
		return nil, err
	}
	rcfg := cfg.Copy()
	rcfg.MaxConns = 8
	rcfg.ConnConfig.Tracer = env.relaySQLCalls
	rcfg.ConnConfig.RuntimeParams["application_name"] = "ackgap-benchmarks-kafka-modes-relay"
	if env.relayPool, err = pgxpool.NewWithConfig(ctx, rcfg); err != nil {
		env.close()
		return nil, err
	}
	if env.relayStore, err = pgxstore.New(env.relayPool, nil); err != nil {
		env.close()
		return nil, err
	}
	if _, err = env.store.Migrate(ctx, &stores.MigrateParams{}); err != nil {
		env.close()
		return nil, err
	}
	if _, err = env.pool.Exec(ctx, `
CREATE TABLE orders (id TEXT PRIMARY KEY, seq INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0);
CREATE TABLE misses (id BIGSERIAL PRIMARY KEY, order_id TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE hand_inbox (consumer TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (consumer, event_id));
CREATE TABLE hand_outbox (id BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, idempotency_key TEXT NOT NULL UNIQUE,
  payload BYTEA NOT NULL, state TEXT NOT NULL DEFAULT 'pending');
CREATE INDEX hand_outbox_pending ON hand_outbox (id) WHERE state = 'pending'`); err != nil {
		env.close()
		return nil, err
	}
	return env, nil
}

func (env *kmEnv) close() {
	if env.prov != nil {
		_ = env.prov.close()
	}
	if env.admin != nil {
		_ = env.admin.Close()
	}
	if env.pool != nil {
		env.pool.Close()
	}
	if env.relayPool != nil {
		env.relayPool.Close()
	}
	if env.my != nil {
		env.my.close()
		return
	}
	if c, err := pgx.Connect(context.Background(), env.o.dsn); err == nil {
		_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+env.schema+" CASCADE")
		_ = c.Close(context.Background())
	}
}

// kmEvent is event i: the seq-th event of its order (key).
type kmEvent struct {
	id    string
	order string
	seq   int
}

// kmPlan deals n events to kmKeys keys round robin, or, hot, half of them
// to key k-0 and the rest round robin.
func kmPlan(n int, hot bool) []kmEvent {
	seqs := map[string]int{}
	evs := make([]kmEvent, n)
	for i := range evs {
		order := "k-" + strconv.Itoa(i%kmKeys)
		if hot {
			if i%2 == 0 {
				order = "k-0"
			} else {
				order = "k-" + strconv.Itoa(1+(i/2)%(kmKeys-1))
			}
		}
		seqs[order]++
		evs[i] = kmEvent{id: fmt.Sprintf("order.step:%s:%d", order, seqs[order]), order: order, seq: seqs[order]}
	}
	return evs
}

// guardedStep is the handler's state change: the order moves to seq only
// from seq-1 (per-key order); a miss is recorded, so an event applied out
// of order or twice is seen.
const guardedStep = `UPDATE orders SET seq = $2, version = version + 1 WHERE id = $1 AND seq = $2 - 1`

// step applies the guarded step with q and records a miss.
func step(ctx context.Context, exec func(ctx context.Context, sql string, args ...any) (int64, error), order string, seq int) error {
	n, err := exec(ctx, guardedStep, order, seq)
	if err != nil {
		return err
	}
	if n != 1 {
		_, err = exec(ctx, `INSERT INTO misses (order_id, seq) VALUES ($1, $2)`, order, seq)
	}
	return err
}

func parseEvent(msg *message.Message) (order string, seq int, err error) {
	o, s, _ := strings.Cut(string(msg.Payload), ",")
	seq, err = strconv.Atoi(s)
	if err != nil {
		return "", 0, ackgap.Permanent(ackgap.ReasonBadPayload, err)
	}
	return o, seq, nil
}

// run runs mode once.
func (env *kmEnv) run(ctx context.Context, mode string, delay time.Duration, hot bool) (*kmResult, error) {
	res := &kmResult{mode: mode, delay: delay, hot: hot, events: env.o.events}
	evs := kmPlan(env.o.events, hot)
	env.dead.n.Store(0)
	if err := env.resetDB(ctx); err != nil {
		return nil, err
	}
	env.prov.reset(delay)
	id := hex.EncodeToString([]byte(time.Now().Format("150405.000000")))
	topic, group := "ackgap-kmodes."+id, "ackgap-kmodes-"+id
	if err := env.admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: kmPartitions, ReplicationFactor: 1}, false); err != nil {
		return nil, fmt.Errorf("create topic: %w", err)
	}
	defer func() {
		_ = env.admin.DeleteConsumerGroup(group)
		_ = env.admin.DeleteTopic(topic)
	}()
	runCtx, cancel := context.WithTimeout(ctx, kmRunTimeout)
	defer cancel()

	// Every connection open before the run, so that its backends are the
	// ones counted.
	pids, relayPIDs := env.dbPIDs(ctx)
	var gaps gapRecorder
	stop, err := env.start(runCtx, mode, topic, group, &gaps)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop()
		}
	}()
	if err := env.ready(runCtx, group); err != nil {
		return nil, err
	}
	runtime.GC()
	self0 := selfCPU()
	pg0, _ := schedCPU(pids)
	rpg0, _ := schedCPU(relayPIDs)
	br0, _ := processCPU(env.brokerID)
	allDone := env.prov.await(2 * len(evs))
	start := time.Now()
	pubErr := make(chan error, 1)
	go func() { pubErr <- env.publish(topic, evs) }()
	select {
	case last := <-allDone:
		res.elapsed = last.Sub(start)
	case err := <-pubErr:
		if err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		select {
		case last := <-allDone:
			res.elapsed = last.Sub(start)
		case <-runCtx.Done():
			return nil, fmt.Errorf("not every effect called within %s: %d of %d", kmRunTimeout, env.prov.count(), 2*len(evs))
		}
	case <-runCtx.Done():
		return nil, fmt.Errorf("not every effect called within %s: %d of %d", kmRunTimeout, env.prov.count(), 2*len(evs))
	}
	res.cpuSelf = selfCPU() - self0
	pg1, _ := schedCPU(pids)
	rpg1, _ := schedCPU(relayPIDs)
	br1, _ := processCPU(env.brokerID)
	res.cpuPG, res.cpuRelayPG, res.cpuBroker = pg1-pg0, rpg1-rpg0, br1-br0
	// Let the last offset commits be confirmed before stopping.
	for i := 0; i < 200 && gaps.pending() > 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	stopped = true
	if err := stop(); err != nil {
		return nil, fmt.Errorf("stop: %w", err)
	}
	res.ackGaps, res.unconfirmed = gaps.snapshot()
	env.check(ctx, res, evs)
	return res, nil
}

// check fills res's correctness: per-key order (every order at its last
// seq, no guarded miss), exactly once (no miss means no second apply; the
// inbox rows count the applied events), every effect called once per
// idempotency key.
func (env *kmEnv) check(ctx context.Context, res *kmResult, evs []kmEvent) {
	want := map[string]int{}
	for _, e := range evs {
		want[e.order] = e.seq
	}
	var why []string
	misses, seqs, err := env.readOutcome(ctx)
	if err != nil {
		why = append(why, err.Error())
	}
	bad := 0
	for id, seq := range seqs {
		if seq != want[id] {
			bad++
		}
	}
	dead := env.dead.n.Load()
	res.orderOK = err == nil && bad == 0 && misses == 0 && dead == 0
	if !res.orderOK {
		why = append(why, fmt.Sprintf("%d orders not at their last step, %d guarded misses and %d refused steps dead-lettered (out of order or applied twice)",
			bad, misses, dead))
	}
	res.onceOK = misses == 0 && dead == 0
	_, keys := env.prov.stats()
	res.effectsOK = keys == 2*len(evs)
	if !res.effectsOK {
		why = append(why, fmt.Sprintf("%d effect keys carried out, want %d", keys, 2*len(evs)))
	}
	res.why = strings.Join(why, "; ")
}

// ready waits until the group is stable with one member.
func (env *kmEnv) ready(ctx context.Context, group string) error {
	for {
		groups, err := env.admin.DescribeConsumerGroups([]string{group})
		if err == nil && len(groups) == 1 && groups[0].State == "Stable" && len(groups[0].Members) == 1 {
			return nil
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("consumer group %s not stable: %w", group, ctx.Err())
		}
	}
}

// publish sends evs in order, keyed by order, with one idempotent Sarama
// producer, kmPublishSize records per request.
func (env *kmEnv) publish(topic string, evs []kmEvent) error {
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	sc.Producer.Return.Successes = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Idempotent = true
	sc.Net.MaxOpenRequests = 1
	prod, err := sarama.NewSyncProducer(env.o.brokers, sc)
	if err != nil {
		return err
	}
	defer prod.Close()
	batch := make([]*sarama.ProducerMessage, 0, kmPublishSize)
	for i, e := range evs {
		msg, err := kafkabroker.NewEvent(e.id, []byte(e.order+","+strconv.Itoa(e.seq)))
		if err != nil {
			return err
		}
		msg.Metadata.Set(kafkabroker.MetadataPartitionKey, e.order)
		rec, err := kafkabroker.Marshaler{}.Marshal(topic, msg)
		if err != nil {
			return err
		}
		batch = append(batch, rec)
		if len(batch) == kmPublishSize || i == len(evs)-1 {
			if err := prod.SendMessages(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

// start starts mode's consumer (and relay) on topic and returns what stops
// them.
func (env *kmEnv) start(ctx context.Context, mode, topic, group string, gaps *gapRecorder) (func() error, error) {
	switch mode {
	case modeUnsafe, modeHandSafe:
		return env.startPlain(ctx, mode, topic, group)
	}
	relay, relayStop, err := env.startRelay(ctx)
	if err != nil {
		return nil, err
	}
	base := kafkabroker.SubscriberConfig{
		Brokers: env.o.brokers, ConsumerGroup: group,
		SessionTimeout: e2eSessionTimeout, CloseTimeout: e2eCloseTimeout,
	}
	observe := func(msgCtx context.Context, rep *ackgap.InboxReport) {
		if rep.Outcome == ackgap.OutcomeApplied {
			gaps.watch(msgCtx, rep.Committed)
		}
	}
	if env.my != nil {
		return startAckgap(ctx, env, env.my.store, env.my.batchStep, mode, topic, base, observe, relay, relayStop)
	}
	return startAckgap(ctx, env, env.store, env.batchStep, mode, topic, base, observe, relay, relayStop)
}

// startAckgap starts ackgap's mode on store, with batchStep as the batched
// mode's set-based handler.
func startAckgap[TTx any](ctx context.Context, env *kmEnv, store stores.Store[TTx], batchStep batch.BatchHandlerFunc[TTx],
	mode, topic string, base kafkabroker.SubscriberConfig, observe func(context.Context, *ackgap.InboxReport),
	relay *outbox.Relay, relayStop func() error) (func() error, error) {
	// ackgap's handler: the guarded step as a guarded transition with its
	// two outbox rows, unread, so the inbox insert, the UPDATE and the rows
	// go as one statement with the COMMIT, in one round trip (PostgreSQL;
	// MariaDB sends them one by one). A refused step (out of order, or
	// applied twice) is a permanent error: the message is dead-lettered,
	// and check counts it.
	handler := func(ctx context.Context, _ TTx, msg *message.Message) error {
		order, seq, err := parseEvent(msg)
		if err != nil {
			return err
		}
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		charge := ackgap.OutboxEntry{Kind: "charge", IdempotencyKey: "charge:" + id, Payload: msg.Payload}
		receipt := ackgap.OutboxEntry{Kind: "receipt", IdempotencyKey: "receipt:" + id, Payload: msg.Payload}
		_, err = ackgap.ApplyTransition(ctx, &ackgap.Transition{
			Table: "orders", Key: order, VersionColumn: "version",
			Guards: []ackgap.Guard{{Column: "seq", Op: ackgap.GuardEqual, Value: seq - 1}},
			Set:    []ackgap.Assignment{{Column: "seq", Value: seq}},
		}, &charge, &receipt)
		return err
	}
	if mode == modeBatched || mode == modeGroup {
		cfg := &batch.Config[TTx]{
			InboxConfig: middleware.InboxConfig{Consumer: kmConsumer, Observer: observe, Dispatch: relay},
			Handler:     handler,
		}
		if mode == modeBatched {
			cfg.BatchHandler = batchStep
		}
		p, err := batch.New[TTx](store, cfg)
		if err != nil {
			return nil, errors.Join(err, relayStop())
		}
		bc, err := kafkabroker.NewBatchConsumer(p.ProcessErrors, &kafkabroker.BatchConsumerConfig{
			ParallelConfig: kafkabroker.ParallelConfig{SubscriberConfig: base},
			Topic:          topic, DeadLetter: &env.dead, DeadLetterTopic: topic + ".dlq",
		}, nil)
		if err != nil {
			return nil, errors.Join(err, relayStop())
		}
		done := make(chan error, 1)
		go func() { done <- bc.Run(ctx) }()
		return func() error { return errors.Join(bc.Close(), <-done, relayStop()) }, nil
	}
	var sub message.Subscriber
	var err error
	switch mode {
	case modePerMsg:
		cfg := base
		cfg.FetchMaxWait = e2eFetchMaxWait
		sub, err = kafkabroker.NewSubscriber(&cfg, nil)
	case modeParallel:
		sub, err = kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: base}, nil)
	}
	if err != nil {
		return nil, errors.Join(err, relayStop())
	}
	r, err := router.New(store, &router.Config{DeadLetter: &env.dead, HandlerTimeout: e2eHandlerTimeout,
		Logger: watermill.NopLogger{}, InboxConfig: middleware.InboxConfig{Observer: observe, Dispatch: relay}})
	if err != nil {
		return nil, errors.Join(err, relayStop())
	}
	if err := r.AddHandler(kmConsumer, topic, sub, handler); err != nil {
		return nil, errors.Join(err, relayStop())
	}
	return env.runRouter(ctx, r.Run, r.Running(), r.Close, relayStop)
}

// batchStep is the batched mode's set-based handler: the guarded step of
// every message in one UPDATE ... FROM unnest, the misses in one INSERT,
// the outbox rows in one statement. batch.Processor calls it once per
// round, never with two events of one order (the record key); if it did,
// the call would fail and the round fall back to the per-message handler.
func (env *kmEnv) batchStep(ctx context.Context, tx pgx.Tx, msgs []*message.Message) error {
	orders := make([]string, len(msgs))
	seqs := make([]int32, len(msgs))
	rows := make([]ackgap.OutboxEntry, 0, 2*len(msgs))
	seen := make(map[string]bool, len(msgs))
	for i, msg := range msgs {
		order, seq, err := parseEvent(msg)
		if err != nil {
			return err
		}
		if seen[order] {
			return fmt.Errorf("order %s twice in one batch", order)
		}
		seen[order] = true
		orders[i], seqs[i] = order, int32(seq)
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		for _, k := range []string{"charge", "receipt"} {
			rows = append(rows, ackgap.OutboxEntry{Kind: k, IdempotencyKey: k + ":" + id, Payload: msg.Payload,
				Consumer: kmConsumer, EventID: id})
		}
	}
	if _, err := tx.Exec(ctx, `WITH u AS (SELECT * FROM unnest($1::text[], $2::int[]) AS u(id, seq)),
moved AS (UPDATE orders o SET seq = u.seq, version = o.version + 1 FROM u WHERE o.id = u.id AND o.seq = u.seq - 1 RETURNING o.id)
INSERT INTO misses (order_id, seq) SELECT u.id, u.seq FROM u WHERE u.id NOT IN (SELECT id FROM moved)`, orders, seqs); err != nil {
		return err
	}
	return ackgap.AddOutboxMany(ctx, rows)
}

// runRouter runs a router until the returned function stops it.
func (env *kmEnv) runRouter(ctx context.Context, run func(context.Context) error, running chan struct{}, closeR func() error, more func() error) (func() error, error) {
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	select {
	case <-running:
	case err := <-done:
		return nil, errors.Join(fmt.Errorf("router stopped before running: %w", err), more())
	}
	return func() error { return errors.Join(closeR(), <-done, more()) }, nil
}

func txExec(tx pgx.Tx) func(ctx context.Context, sql string, args ...any) (int64, error) {
	return func(ctx context.Context, sql string, args ...any) (int64, error) {
		tag, err := tx.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	}
}

func poolExec(p *pgxpool.Pool) func(ctx context.Context, sql string, args ...any) (int64, error) {
	return func(ctx context.Context, sql string, args ...any) (int64, error) {
		tag, err := p.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	}
}

// startRelay starts ackgap's outbox relay calling the provider; the
// consumers hand it their rows right after their commit (InboxConfig.Dispatch).
func (env *kmEnv) startRelay(ctx context.Context) (*outbox.Relay, func() error, error) {
	var relayStore stores.OutboxStore = env.relayStore
	if env.my != nil {
		relayStore = env.my.relayStore
	}
	relay, err := outbox.New(relayStore, &outbox.Config{
		Effects: map[string]outbox.Effect{
			"charge":  outbox.HTTP(env.prov.client, env.prov.url),
			"receipt": outbox.HTTP(env.prov.client, env.prov.url),
		},
		// Concurrency: the default (outbox.ConcurrencyDefault, 100), which
		// 20 ms calls need: 100 in flight carry out up to 5,000 rows/s.
		PollInterval: cmp.Or(env.relayPoll, kmPollEvery),
	})
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx) }()
	return relay, func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}, nil
}

// startPlain starts the Watermill-only consumers: watermill-kafka's
// subscriber with its defaults (auto-commit every second after the ack)
// behind a plain Watermill router.
func (env *kmEnv) startPlain(ctx context.Context, mode, topic, group string) (func() error, error) {
	sc := kafka.DefaultSaramaSubscriberConfig()
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Version = kafkabroker.VersionDefault
	sub, err := kafka.NewSubscriber(kafka.SubscriberConfig{
		Brokers: env.o.brokers, Unmarshaler: kafkabroker.Marshaler{}, ConsumerGroup: group, OverwriteSaramaConfig: sc,
	}, watermill.NopLogger{})
	if err != nil {
		return nil, err
	}
	r, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		return nil, err
	}
	more := func() error { return nil }
	var h message.NoPublishHandlerFunc
	switch mode {
	case modeUnsafe:
		h = func(msg *message.Message) error {
			order, seq, err := parseEvent(msg)
			if err != nil {
				return err
			}
			if env.my != nil {
				err = myStep(msg.Context(), env.my.store.DB(), order, seq)
			} else {
				err = step(msg.Context(), poolExec(env.pool), order, seq)
			}
			if err != nil {
				return err
			}
			id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
			for _, k := range []string{"charge", "receipt"} {
				if err := env.prov.call(msg.Context(), k+":"+id, msg.Payload); err != nil {
					return err
				}
			}
			return nil
		}
	case modeHandSafe:
		h = func(msg *message.Message) error { return env.handSafe(msg) }
		relayRun := env.handRelay
		if env.my != nil {
			h = env.my.handSafe
			relayRun = func(ctx context.Context) { env.my.handRelay(ctx, env.prov) }
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); relayRun(rctx) }()
		more = func() error { cancel(); <-done; return nil }
	}
	r.AddConsumerHandler(kmConsumer, topic, sub, h)
	return env.runRouter(ctx, r.Run, r.Running(), r.Close, more)
}

// handSafe is the careful hand-written safe consumer: inbox insert,
// guarded UPDATE and two outbox rows in one transaction, commit, ack.
func (env *kmEnv) handSafe(msg *message.Message) error {
	ctx := msg.Context()
	order, seq, err := parseEvent(msg)
	if err != nil {
		return err
	}
	id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
	tx, err := env.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, `INSERT INTO hand_inbox (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, kmConsumer, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return tx.Commit(ctx) // a duplicate
	}
	if err := step(ctx, txExec(tx), order, seq); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO hand_outbox (kind, idempotency_key, payload) VALUES ('charge', $1, $3), ('receipt', $2, $3)`,
		"charge:"+id, "receipt:"+id, msg.Payload); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// handRelay is a plain polling relay: claim up to kmHandClaim pending rows
// in one statement, call them concurrently, mark the done ones in one
// statement; poll every kmPollEvery when a claim came back short.
func (env *kmEnv) handRelay(ctx context.Context) {
	for ctx.Err() == nil {
		rows, err := env.relayPool.Query(ctx, `UPDATE hand_outbox SET state = 'claimed' WHERE id IN (
  SELECT id FROM hand_outbox WHERE state = 'pending' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
RETURNING id, idempotency_key, payload`, kmHandClaim)
		type row struct {
			id      int64
			key     string
			payload []byte
		}
		var claimed []row
		if err == nil {
			for rows.Next() {
				var r row
				if rows.Scan(&r.id, &r.key, &r.payload) == nil {
					claimed = append(claimed, r)
				}
			}
			rows.Close()
		}
		if len(claimed) > 0 {
			done := make([]int64, 0, len(claimed))
			failed := make([]int64, 0)
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, r := range claimed {
				wg.Go(func() {
					err := env.prov.call(ctx, r.key, r.payload)
					mu.Lock()
					if err == nil {
						done = append(done, r.id)
					} else {
						failed = append(failed, r.id)
					}
					mu.Unlock()
				})
			}
			wg.Wait()
			bg := context.WithoutCancel(ctx)
			_, _ = env.relayPool.Exec(bg, `UPDATE hand_outbox SET state = 'done' WHERE id = ANY($1)`, done)
			if len(failed) > 0 {
				_, _ = env.relayPool.Exec(bg, `UPDATE hand_outbox SET state = 'pending' WHERE id = ANY($1)`, failed)
			}
		}
		if len(claimed) < kmHandClaim {
			select {
			case <-time.After(kmPollEvery):
			case <-ctx.Done():
			}
		}
	}
}

// gapRecorder records the ack gap (commit -> broker confirmed) of applied
// messages through their ackgap.Delivery, and on a broker with a lease
// (SQS) the lease headroom at the confirmation.
type gapRecorder struct {
	mu          sync.Mutex
	gaps        []time.Duration
	headrooms   []time.Duration
	unconfirmed int64
	waiting     atomic.Int64
}

func (g *gapRecorder) watch(ctx context.Context, committed time.Time) {
	d, ok := ackgap.DeliveryFromContext(ctx)
	if !ok {
		return
	}
	g.waiting.Add(1)
	if !d.OnSettled(func(s ackgap.Settlement) {
		defer g.waiting.Add(-1)
		g.mu.Lock()
		defer g.mu.Unlock()
		// The headroom of every answered settle, a late one (negative)
		// included: that is the one that announces a duplicate.
		if s.Acked && !s.LeaseDeadline.IsZero() && !s.Answered.IsZero() {
			g.headrooms = append(g.headrooms, s.LeaseDeadline.Sub(s.Answered))
		}
		if s.Err != nil || s.Confirmed.IsZero() {
			g.unconfirmed++
			return
		}
		g.gaps = append(g.gaps, s.Confirmed.Sub(committed))
	}) {
		g.waiting.Add(-1)
	}
}

func (g *gapRecorder) pending() int64 { return g.waiting.Load() }

func (g *gapRecorder) snapshot() ([]time.Duration, int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.gaps), g.unconfirmed
}

// leaseHeadrooms returns the lease headrooms recorded (none on Kafka).
func (g *gapRecorder) leaseHeadrooms() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.headrooms)
}

// kmPoolPIDs returns the backend pids of every connection of pool, opening
// them all first, so that the run's statements run on backends counted.
func kmPoolPIDs(ctx context.Context, pool *pgxpool.Pool) []uint32 {
	var conns []*pgxpool.Conn
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	pids := make([]uint32, 0, len(conns))
	for _, c := range conns {
		pids = append(pids, c.Conn().PgConn().PID())
		c.Release()
	}
	return pids
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// kmProvider is the payment provider and mailer on one loopback HTTP
// server: it dedupes on the Idempotency-Key header, answers after delay,
// and wakes waiters when n keys were carried out.
type kmProvider struct {
	url    string
	client *http.Client
	srv    *http.Server
	served sync.WaitGroup

	mu      sync.Mutex
	delay   time.Duration
	keys    map[string]bool
	calls   int
	waitN   int
	waitCh  chan time.Time
	waiting bool
}

func startKMProvider() (*kmProvider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	p := &kmProvider{url: "http://" + ln.Addr().String() + "/v1/effects", client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, keys: map[string]bool{}}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	p.served.Go(func() { _ = p.srv.Serve(ln) })
	return p, nil
}

func (p *kmProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "Idempotency-Key required", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	delay := p.delay
	p.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	now := time.Now()
	p.mu.Lock()
	p.calls++
	repeat := p.keys[key]
	p.keys[key] = true
	if p.waiting && len(p.keys) >= p.waitN {
		p.waiting = false
		p.waitCh <- now
	}
	p.mu.Unlock()
	if repeat {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// call is an inline effect call.
func (p *kmProvider) call(ctx context.Context, key string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", key)
	//ackgapvet:ignore effect the unsafe mode calls the provider from the handler on purpose: the benchmark measures what the outbox costs against it
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("provider: %s", resp.Status)
	}
	return nil
}

func (p *kmProvider) reset(delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay, p.keys, p.calls, p.waiting = delay, map[string]bool{}, 0, false
}

// await returns a channel that gets the time the n-th key was carried out.
func (p *kmProvider) await(n int) <-chan time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waitN, p.waitCh, p.waiting = n, make(chan time.Time, 1), true
	return p.waitCh
}

func (p *kmProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.keys)
}

func (p *kmProvider) stats() (calls, keys int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, len(p.keys)
}

func (p *kmProvider) close() error {
	p.client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	p.served.Wait()
	return err
}

// kmMarkdown renders the comparison.
func kmMarkdown(o kmOptions, results []*kmResult, took time.Duration, loadBefore, loadAfter string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	begin, end := o.markers()
	db := o.dbName()
	w("%s\n\n", begin)
	cmd := "go run ./benchmarks -kafka-modes"
	if o.store == kmStoreMariaDB {
		cmd += " -kafka-modes-store mariadb"
		w("## Kafka ordering modes on MariaDB (issues #11, #23)\n\n")
	} else {
		w("## Kafka ordering modes (issue #11)\n\n")
	}
	w("Produced by `%s` on %s UTC in %s: %d events per run, %d partitions, %d keys, %s, kfake; "+
		"%d runs per cell, cells alternating (every mode once, then again), so load from elsewhere hits all alike. "+
		"%d CPUs; load average (1 min) %s at the start, %s at the end: with other jobs on the machine absolute figures are noisy, ratios within one run less so.\n\n",
		cmd, time.Now().UTC().Format("2006-01-02 15:04"), took.Round(time.Second), o.events, kmPartitions, kmKeys, db, o.runs,
		runtime.NumCPU(), loadBefore, loadAfter)
	w("Each run publishes every event at once (one idempotent producer, %d records per request), then waits until the provider "+
		"carried out both effects (charge and receipt, deduped on the Idempotency-Key header) of every event: events/s is "+
		"events / (publish start → last effect). Every run checks per-key order and exactly-once (every order at its last step, "+
		"no guarded UPDATE missed: an event out of its key's order or applied twice would miss) and every effect key carried out. "+
		"CPU is per event: this process (consumer, relay, producer and provider together), the %s %s serving the consumer, "+
		"those serving the relay (a pool of its own), kfake.\n\n", kmPublishSize, db, o.serverUnits())
	w("The consumers: `unsafe-inline` is watermill-kafka's subscriber with its defaults, the guarded UPDATE and the two HTTP calls " +
		"inline, no inbox; `hand-safe` a careful hand-written safe consumer (inbox insert, guarded UPDATE and two outbox rows in one " +
		"transaction, a polling relay). ackgap's modes run one handler, `ackgap.ApplyTransition` of the guarded step with its two " +
		"outbox rows, unread, so the inbox insert, the UPDATE and the rows travel as one statement with the COMMIT (a refused step is " +
		"dead-lettered and counted as a miss), and hand their rows to the relay in the same process (direct dispatch): " +
		"`per-message` behind `kafkabroker.Subscriber` (one message per partition at a time), `key-parallel` behind " +
		"`kafkabroker.ParallelSubscriber` (up to 64 per partition, one key at a time, a transaction each), `group-commit` the same " +
		"handler run by `kafkabroker.BatchConsumer` (key-ordered, one transaction per fetched batch, a savepoint per message), " +
		"`batched` the BatchConsumer with a set-based batch handler (one UPDATE ... FROM unnest for the batch, " +
		"`ackgap.AddOutboxMany`).\n\n")
	if o.store == kmStoreMariaDB {
		w("On MariaDB (benchmarks/kafka_modes_mariadb.go) the SQL is a MySQL user's: `?` placeholders; `hand-safe` inserts its inbox row " +
			"with 1062 as the duplicate, at READ COMMITTED, and its relay claims with SELECT ... FOR UPDATE SKIP LOCKED then UPDATE by id " +
			"(no UPDATE ... RETURNING); `batched`'s set-based handler reads and locks the orders the step will move (SELECT ... FOR UPDATE " +
			"joined to the batch as a derived table of SELECT ?, ? rows), moves them with one multi-table UPDATE, and inserts the misses " +
			"in one INSERT; mysqlstore sends each store statement on its own (no pipelining), so ackgap's modes do not save the round " +
			"trips they save on PostgreSQL.\n\n")
	}
	w("| mode | provider | events/s | CPU µs/event: process + %s consumer + %s relay + kfake = total | ack gap p50 / p99 (ms) | correct |\n|---|---|---:|---:|---:|---|\n", db, db)
	type key struct {
		mode  string
		delay time.Duration
		hot   bool
	}
	groups := map[key][]*kmResult{}
	var order []key
	for _, r := range results {
		k := key{r.mode, r.delay, r.hot}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	rate := func(k key) float64 {
		rs := groups[k]
		if len(rs) == 0 {
			return 0
		}
		var s float64
		for _, r := range rs {
			s += r.rate()
		}
		return s / float64(len(rs))
	}
	cpu := func(k key) (self, pg, rpg, br float64) {
		rs := groups[k]
		if len(rs) == 0 {
			return 0, 0, 0, 0
		}
		for _, r := range rs {
			n := float64(r.events)
			self += float64(r.cpuSelf.Microseconds()) / n
			pg += float64(r.cpuPG.Microseconds()) / n
			rpg += float64(r.cpuRelayPG.Microseconds()) / n
			br += float64(r.cpuBroker.Microseconds()) / n
		}
		c := float64(len(rs))
		return self / c, pg / c, rpg / c, br / c
	}
	for _, k := range order {
		rs := groups[k]
		lo, hi := rs[0].rate(), rs[0].rate()
		var gaps []time.Duration
		var unconf int64
		ok := true
		for _, r := range rs {
			lo, hi = min(lo, r.rate()), max(hi, r.rate())
			gaps = append(gaps, r.ackGaps...)
			unconf += r.unconfirmed
			ok = ok && r.correct()
		}
		self, pg, rpg, br := cpu(k)
		gapCol := "n/a (auto-commit every 1 s, not observable)"
		if len(gaps) > 0 {
			slices.Sort(gaps)
			gapCol = fmt.Sprintf("%.1f / %.1f", ms(percentile(gaps, 0.5)), ms(percentile(gaps, 0.99)))
			if unconf > 0 {
				gapCol += fmt.Sprintf(" (%d unconfirmed)", unconf)
			}
		}
		prov := "at once"
		if k.delay > 0 {
			prov = "after " + k.delay.String()
		}
		if k.hot {
			prov += ", hot key"
		}
		mark := "yes"
		if !ok {
			mark = "NO"
		}
		w("| %s | %s | %.0f [%.0f–%.0f] | %.0f + %.0f + %.0f + %.0f = %.0f | %s | %s |\n", k.mode, prov, rate(k), lo, hi, self, pg, rpg, br, self+pg+rpg+br, gapCol, mark)
	}
	w("\n### Targets\n\n| target | measured | met |\n|---|---:|---|\n")
	ratio := func(a, b key) float64 {
		if rate(b) == 0 {
			return 0
		}
		return rate(a) / rate(b)
	}
	cpuTot := func(k key) float64 { s, p, rp, br := cpu(k); return s + p + rp + br }
	met := func(v, want float64) string {
		if v >= want {
			return "met"
		}
		return "**missed**"
	}
	at0 := func(m string) key { return key{m, 0, false} }
	at20 := func(m string) key { return key{m, 20 * time.Millisecond, false} }
	r := ratio(at0(modeParallel), at0(modeUnsafe))
	w("| provider at once: key-parallel ≥ 1.0× unsafe-inline | %.2f× | %s |\n", r, met(r, 1.0))
	r = ratio(at0(modeBatched), at0(modeUnsafe))
	w("| provider at once: batched ≥ 1.5× unsafe-inline | %.2f× | %s |\n", r, met(r, 1.5))
	r = ratio(at0(modeParallel), at0(modeHandSafe))
	w("| provider at once: key-parallel ≥ 2× hand-safe | %.2f× | %s |\n", r, met(r, 2))
	r = ratio(at0(modeBatched), at0(modeHandSafe))
	w("| provider at once: batched ≥ 2× hand-safe | %.2f× | %s |\n", r, met(r, 2))
	for _, m := range []string{modeParallel, modeBatched} {
		if u := cpuTot(at0(modeUnsafe)); u > 0 {
			c := cpuTot(at0(m)) / u
			w("| provider at once: %s CPU per event ≤ 1.2× unsafe-inline's | %.2f× | %s |\n", m, c, met(1.2, c))
		}
	}
	r = ratio(at20(modeParallel), at20(modeUnsafe))
	w("| provider after 20 ms: key-parallel ≥ 10× unsafe-inline | %.2f× | %s |\n", r, met(r, 10))
	if o.hotKey {
		w("\nHot key (half the events on one key, provider at once), throughput against the uniform run of the same mode:\n\n")
		w("| mode | uniform events/s | hot-key events/s | hot / uniform |\n|---|---:|---:|---:|\n")
		for _, m := range kmModes {
			u, h := rate(at0(m)), rate(key{m, 0, true})
			if u > 0 && h > 0 {
				w("| %s | %.0f | %.0f | %.2f |\n", m, u, h, h/u)
			}
		}
	}
	w("\n%s\n", end)
	return b.String()
}

// Markers of the comparison's section in RESULTS.md: a run replaces what
// is between them and leaves the rest of the file alone.
const (
	kmBegin = "<!-- kafka-modes: begin (go run ./benchmarks -kafka-modes) -->"
	kmEnd   = "<!-- kafka-modes: end -->"
)

// Markers of the MariaDB comparison's section (-kafka-modes-store mariadb).
const (
	kmMariaBegin = "<!-- kafka-modes mariadb: begin (go run ./benchmarks -kafka-modes -kafka-modes-store mariadb) -->"
	kmMariaEnd   = "<!-- kafka-modes mariadb: end -->"
)

// markers returns the markers of o's section: a run on MariaDB keeps the
// PostgreSQL section, and the other way round.
func (o *kmOptions) markers() (begin, end string) {
	if o.store == kmStoreMariaDB {
		return kmMariaBegin, kmMariaEnd
	}
	return kmBegin, kmEnd
}

// serverUnits names what serves a connection: PostgreSQL's backends,
// MariaDB's threads (one per connection).
func (o *kmOptions) serverUnits() string {
	if o.store == kmStoreMariaDB {
		return "threads"
	}
	return "backends"
}

// spliceBetween returns doc with the section between begin and end
// replaced by section (appended when doc has none).
func spliceBetween(doc, section, begin, end string) string {
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	return doc[:i] + strings.TrimRight(section, "\n") + doc[j+len(end):]
}

// kfakeListening returns the pid of a kfake process on this machine whose
// command line names addr's port (kfake -port N), for a kfake started from
// another directory than tools/brokers.sh's; 0 when there is none.
func kfakeListening(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || !strings.HasSuffix(args[0], "kfake") {
			continue
		}
		for i := range args[:len(args)-1] {
			if (args[i] == "-port" || args[i] == "--port") && args[i+1] == port {
				return pid
			}
		}
	}
	return 0
}

// loadAverage returns the machine's 1-minute load average as Linux reports
// it, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}
