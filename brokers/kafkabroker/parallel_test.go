package kafkabroker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// newParallel returns a ParallelSubscriber in group, closed when t ends.
func newParallel(t testing.TB, group string, tune func(*kafkabroker.ParallelConfig)) *kafkabroker.ParallelSubscriber {
	t.Helper()
	cfg := parallelConfig(kafkaBrokers(t), group)
	if tune != nil {
		tune(cfg)
	}
	sub, err := kafkabroker.NewParallelSubscriber(cfg, testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// parallelConfig is the tests' ParallelConfig: the session timeout is
// short so an unclean end (a killed process) costs the next member little.
func parallelConfig(brokers []string, group string) *kafkabroker.ParallelConfig {
	return &kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
		Brokers:        brokers,
		ConsumerGroup:  group,
		HoldTimeout:    20 * time.Second,
		SessionTimeout: 2 * time.Second,
		CloseTimeout:   10 * time.Second,
	}}
}

// produce writes msgs to topic in order with one Sarama producer, in
// batches (kafkabroker's publisher sends one record per request). With
// partition >= 0 every record goes there; otherwise the record key
// chooses.
func produce(t testing.TB, topic string, partition int32, msgs []*message.Message) {
	t.Helper()
	produceOn(t, kafkaBrokers(t), topic, partition, msgs)
}

// produceOn is produce to the broker at brokers.
func produceOn(t testing.TB, brokers []string, topic string, partition int32, msgs []*message.Message) {
	t.Helper()
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	sc.Producer.Return.Successes = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Idempotent = true
	sc.Net.MaxOpenRequests = 1
	if partition >= 0 {
		sc.Producer.Partitioner = sarama.NewManualPartitioner
	}
	producer, err := sarama.NewSyncProducer(brokers, sc)
	require.NoError(t, err)
	defer producer.Close()
	batch := make([]*sarama.ProducerMessage, 0, 500)
	flush := func() {
		if len(batch) > 0 {
			require.NoError(t, producer.SendMessages(batch))
			batch = batch[:0]
		}
	}
	for _, m := range msgs {
		pm, err := kafkabroker.Marshaler{}.Marshal(topic, m)
		require.NoError(t, err)
		if partition >= 0 {
			pm.Partition = partition
		}
		batch = append(batch, pm)
		if len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
}

// seqBackend is a PostgreSQL store with a per-key sequence: each event
// carries (key, seq) and applying it moves the key's seq from seq-1 to
// seq, so an event applied out of its key's order is seen.
type seqBackend struct {
	store  *pgxstore.Store
	pool   *pgxpool.Pool
	schema string // for child processes: testdb.Open

	mu         sync.Mutex
	violations []string
}

func newSeqBackend(t testing.TB, keys int) *seqBackend {
	t.Helper()
	ctx := context.Background()
	pool, schema := testdb.Schema(t, 16)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, createApplied)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE TABLE key_seq (key TEXT PRIMARY KEY, seq INTEGER NOT NULL)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO key_seq SELECT 'k-' || i, 0 FROM generate_series(0, $1::int - 1) AS i`, keys)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, createFixed)
	require.NoError(t, err)
	return &seqBackend{store: store, pool: pool, schema: schema}
}

// seqEvent is event i of key k with sequence seq (from 1).
func seqEvent(t testing.TB, id string, key string, seq int) *message.Message {
	t.Helper()
	msg, err := kafkabroker.NewEvent(id, []byte(key+","+strconv.Itoa(seq)))
	require.NoError(t, err)
	msg.Metadata.Set(kafkabroker.MetadataPartitionKey, key)
	return msg
}

// produceSeq publishes n events over keys keys, round robin, to topic's
// partitions by key: event i is evt-%05d of key k-(i mod keys), that key's
// sequence i/keys+1.
func produceSeq(t testing.TB, topic string, n, keys int) {
	t.Helper()
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		msgs = append(msgs, seqEvent(t, fmt.Sprintf("evt-%05d", i), fmt.Sprintf("k-%d", i%keys), i/keys+1))
	}
	produce(t, topic, -1, msgs)
}

// apply is the handler: the guarded per-key step plus the applied count.
func (b *seqBackend) apply(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
	key, seq, err := keySeq(msg)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `UPDATE key_seq SET seq = $2 WHERE key = $1 AND seq = $2 - 1`, key, seq)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		b.mu.Lock()
		b.violations = append(b.violations, fmt.Sprintf("%s seq %d", key, seq))
		b.mu.Unlock()
	}
	id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
	_, err = tx.Exec(ctx, `INSERT INTO applied (event_id, n) VALUES ($1, 1)
ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, id)
	return err
}

// keySeq returns the key and sequence a seqEvent carries; a permanent
// error for any other payload.
func keySeq(msg *message.Message) (key string, seq int, err error) {
	key, seqS, _ := strings.Cut(string(msg.Payload), ",")
	seq, err = strconv.Atoi(seqS)
	if err != nil {
		return "", 0, ackgap.Permanent("", err)
	}
	return key, seq, nil
}

func (b *seqBackend) seqs(t testing.TB) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT key, seq FROM key_seq`)
	require.NoError(t, err)
	return collect(t, rows.Next, rows.Scan, func() error { rows.Close(); return nil }, rows.Err)
}

func (b *seqBackend) applied(t testing.TB) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT event_id, n FROM applied`)
	require.NoError(t, err)
	return collect(t, rows.Next, rows.Scan, func() error { rows.Close(); return nil }, rows.Err)
}

// requireAppliedOnceInOrder checks b after n events over keys keys: every
// event applied exactly once, and every key's sequence at its last event.
// The guarded per-key step only moves a key from seq-1 to seq, so with
// each event applied once a key ends at its last sequence only if its
// events were applied in order.
func requireAppliedOnceInOrder(t testing.TB, b *seqBackend, n, keys int) {
	t.Helper()
	applied := b.applied(t)
	require.Len(t, applied, n)
	for id, c := range applied {
		require.Equal(t, 1, c, "event %s applied %d times", id, c)
	}
	for k, seq := range b.seqs(t) {
		require.Equal(t, n/keys, seq, "key %s: events applied out of order", k)
	}
}

// TestParallelKeyOrder: 10,000 events over 1,000 keys on 4 partitions,
// consumed through the router and a PostgreSQL inbox by a
// ParallelSubscriber with 64 records per partition in flight: every key's
// events are applied in offset order (the guarded per-key sequence never
// skips), every event exactly once, and every offset is committed (the
// group re-reads nothing afterwards).
func TestParallelKeyOrder(t *testing.T) {
	t.Parallel()
	const n, keys = 10000, 1000
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, keys)
	produceSeq(t, topic, n, keys)
	require.Equal(t, int64(n), topicSize(t, topic))

	rep := &reports{}
	r, err := router.New(b.store, &router.Config{
		DeadLetter: newPublisher(t), DeadLetterTopic: topic + ".dlq", Logger: testLogger(),
		InboxConfig: middleware.InboxConfig{Observer: rep.observe},
	})
	require.NoError(t, err)
	sub := newParallel(t, group, func(c *kafkabroker.ParallelConfig) { c.MaxInFlight = 64 })
	require.NoError(t, r.AddHandler("billing", topic, sub, b.apply))
	started := time.Now()
	rn := start(t, r)
	eventually(t, 5*time.Minute, "10,000 events applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	elapsed := time.Since(started)
	require.NoError(t, rn.close())
	t.Logf("%d events applied in %s including the group join (%.0f events/s)", n, elapsed.Round(time.Millisecond), n/elapsed.Seconds())

	b.mu.Lock()
	require.Empty(t, b.violations, "events applied out of their key's order")
	b.mu.Unlock()
	requireAppliedOnceInOrder(t, b, n, keys)
	assertNothingRedelivered(t, topic, group)
}

// TestParallelBackPressure: a slow key (its first record never acked
// until the end) holds its partition's watermark; the partition reads at
// most MaxBufferedRecords records and hands out nothing beyond them, so
// memory stays bounded. Once the slow record is acked everything flows,
// each delivery is settled confirmed, and the committed offset reaches the
// end.
func TestParallelBackPressure(t *testing.T) {
	t.Parallel()
	const n, limit = 400, 40
	topic, group := unique("orders"), unique("billing")
	msgs := []*message.Message{seqEvent(t, "slow-0", "slow", 1)}
	for i := 1; i < n; i++ {
		msgs = append(msgs, seqEvent(t, fmt.Sprintf("evt-%03d", i), fmt.Sprintf("k-%d", i%50), 1))
	}
	produce(t, topic, 0, msgs)

	sub := newParallel(t, group, func(c *kafkabroker.ParallelConfig) {
		c.MaxInFlight = 8
		c.MaxBufferedRecords = limit
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)

	var slow *message.Message
	var settled []chan ackgap.Settlement
	received := 0
	peak := func() int {
		p := 0
		for _, s := range sub.Stats() {
			require.LessOrEqual(t, s.Buffered, limit)
			p = max(p, s.PeakBuffered)
		}
		return p
	}
	recv := func(msg *message.Message) {
		received++
		d, ok := ackgap.DeliveryFromContext(msg.Context())
		require.True(t, ok)
		ch := make(chan ackgap.Settlement, 1)
		require.True(t, d.OnSettled(func(s ackgap.Settlement) { ch <- s }))
		settled = append(settled, ch)
		if msg.UUID == "slow-0" {
			slow = msg
			return
		}
		msg.Ack()
	}
	// Read until the partition is full: limit records buffered, the slow
	// one holding the watermark at offset 0.
	deadline := time.After(time.Minute)
	for slow == nil || peak() < limit {
		select {
		case msg := <-out:
			recv(msg)
		case <-deadline:
			t.Fatalf("partition buffered %d records in 1 min, want %d", peak(), limit)
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.NotNil(t, slow)
	// Nothing beyond the buffer is handed out, however long we wait.
	for quiet := false; !quiet; {
		select {
		case msg := <-out:
			recv(msg)
		case <-time.After(300 * time.Millisecond):
			quiet = true
		}
	}
	require.LessOrEqual(t, received, limit, "handed out more records than the buffer holds")
	require.LessOrEqual(t, peak(), limit)
	for _, s := range sub.Stats() {
		if s.Buffered > 0 {
			require.Equal(t, int64(0), s.Watermark, "the slow record holds the watermark")
		}
	}
	// At most the slow record's own offset, committed with the records
	// finished above it in its metadata.
	require.LessOrEqual(t, committedOffset(t, group, topic, 0), int64(0), "nothing committed past the slow record")

	slow.Ack()
	deadline = time.After(time.Minute)
	for received < n {
		select {
		case msg := <-out:
			recv(msg)
		case <-deadline:
			t.Fatalf("received %d of %d in 1 min", received, n)
		}
	}
	for i, ch := range settled {
		select {
		case s := <-ch:
			require.True(t, s.Acked)
			require.NoError(t, s.Err, "delivery %d", i)
			require.False(t, s.Confirmed.IsZero())
		case <-time.After(30 * time.Second):
			t.Fatalf("delivery %d not settled in 30s", i)
		}
	}
	require.Equal(t, int64(n), committedOffset(t, group, topic, 0))
	require.LessOrEqual(t, peak(), limit)
	for _, st := range sub.Stats() {
		if st.Partition == 0 {
			require.Equal(t, int64(n), st.Committed, "Stats shows the accepted commit")
		}
	}
	require.NoError(t, sub.Close())
}

// TestParallelInFlightAndClose: a partition hands out at most MaxInFlight
// records that are neither acked nor nacked. With a CommitInterval of an
// hour nothing is committed while the subscriber runs; Close commits every
// finished watermark and settles each delivery confirmed.
func TestParallelInFlightAndClose(t *testing.T) {
	t.Parallel()
	const n, inFlight = 50, 8
	topic, group := unique("orders"), unique("billing")
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		msgs = append(msgs, seqEvent(t, fmt.Sprintf("evt-%03d", i), fmt.Sprintf("k-%d", i), 1))
	}
	produce(t, topic, 0, msgs)
	sub := newParallel(t, group, func(c *kafkabroker.ParallelConfig) {
		c.MaxInFlight = inFlight
		c.CommitInterval = time.Hour
	})
	out, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)

	var held []*message.Message
	var settled []chan ackgap.Settlement
	take := func(msg *message.Message) {
		d, ok := ackgap.DeliveryFromContext(msg.Context())
		require.True(t, ok)
		ch := make(chan ackgap.Settlement, 1)
		require.True(t, d.OnSettled(func(s ackgap.Settlement) { ch <- s }))
		settled = append(settled, ch)
		held = append(held, msg)
	}
	for len(held) < inFlight {
		select {
		case msg := <-out:
			take(msg)
		case <-time.After(time.Minute):
			t.Fatalf("%d messages in 1 min, want %d", len(held), inFlight)
		}
	}
	select {
	case msg := <-out:
		t.Fatalf("message %s handed out beyond MaxInFlight", msg.UUID)
	case <-time.After(300 * time.Millisecond):
	}
	for len(settled) < n {
		held[0].Ack()
		held = held[1:]
		select {
		case msg := <-out:
			take(msg)
		case <-time.After(time.Minute):
			t.Fatal("no message after an ack in 1 min")
		}
	}
	for _, msg := range held {
		msg.Ack()
	}
	eventually(t, time.Minute, "the watermark at the end", func() bool {
		for _, st := range sub.Stats() {
			if st.Partition == 0 {
				require.Equal(t, int64(-1), st.Committed, "nothing committed before the interval")
				return st.Watermark == n && st.Buffered == 0 && st.InFlight == 0
			}
		}
		return false
	})
	require.Equal(t, int64(-1), committedOffset(t, group, topic, 0), "CommitInterval not reached: nothing committed yet")
	require.NoError(t, sub.Close())
	require.Equal(t, int64(n), committedOffset(t, group, topic, 0), "Close commits the watermark")
	for i, ch := range settled {
		select {
		case s := <-ch:
			require.NoError(t, s.Err, "delivery %d", i)
			require.False(t, s.Confirmed.IsZero(), "delivery %d confirmed by the commit at Close", i)
		default:
			t.Fatalf("delivery %d not settled after Close", i)
		}
	}
	_, ok := <-out
	require.False(t, ok, "the channel is closed after Close")
}

// TestParallelConfig: defaults are filled in, every bad field is named at
// once, and ConfigureSarama may not turn Sarama's own commits on.
func TestParallelConfig(t *testing.T) {
	t.Parallel()
	c := kafkabroker.ParallelConfig{}.WithDefaults()
	require.Equal(t, kafkabroker.OrderingKey, c.Ordering)
	require.Equal(t, kafkabroker.MaxInFlightDefault, c.MaxInFlight)
	require.Equal(t, kafkabroker.MaxBufferedRecordsDefault, c.MaxBufferedRecords)
	require.Equal(t, int64(kafkabroker.MaxBufferedBytesDefault), c.MaxBufferedBytes)
	require.Equal(t, kafkabroker.HoldTimeoutDefault, c.HoldTimeout)
	require.Equal(t, kafkabroker.CommitTimeoutDefault, c.CommitTimeout)
	require.LessOrEqual(t, c.HoldTimeout+c.CommitTimeout, c.RebalanceTimeout, "the defaults fit the default rebalance timeout")
	require.False(t, c.SaramaConfig().Consumer.Offsets.AutoCommit.Enable, "the subscriber commits itself")
	require.Equal(t, "key", kafkabroker.OrderingKey.String())

	_, err := kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{
		Ordering: kafkabroker.Ordering(7), MaxInFlight: 100, MaxBufferedRecords: 10, MaxBufferedBytes: -1,
	}, nil)
	require.ErrorContains(t, err, "invalid config")
	for _, field := range []string{"Brokers", "ConsumerGroup", "Ordering", "MaxBufferedRecords is 10", "MaxBufferedBytes"} {
		require.ErrorContains(t, err, field)
	}
	_, err = kafkabroker.NewParallelSubscriber(nil, nil)
	require.ErrorContains(t, err, "invalid config")

	// CommitTimeout: a revoked partition's wait (HoldTimeout) and its last
	// commit fit the rebalance.
	base := kafkabroker.SubscriberConfig{Brokers: []string{"127.0.0.1:1"}, ConsumerGroup: "g", HoldTimeout: time.Minute}
	for _, bad := range []time.Duration{-time.Second, kafkabroker.CommitMargin + time.Millisecond} {
		_, err = kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: base, CommitTimeout: bad}, nil)
		require.ErrorContains(t, err, "invalid config")
		require.ErrorContains(t, err, "CommitTimeout is "+bad.String()+", must be more than 0 and at most RebalanceTimeout (1m5s) - HoldTimeout (1m0s)")
	}
	longer := base
	longer.RebalanceTimeout = 2 * time.Minute
	sub, err := kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: longer, CommitTimeout: 30 * time.Second}, nil)
	require.NoError(t, err, "a longer CommitTimeout with a longer RebalanceTimeout")
	require.NoError(t, sub.Close())

	_, err = kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
		Brokers: []string{"127.0.0.1:1"}, ConsumerGroup: "g",
		ConfigureSarama: func(c *sarama.Config) { c.Consumer.Offsets.AutoCommit.Enable = true },
	}}, nil)
	require.ErrorContains(t, err, "AutoCommit.Enable")

	sub, err = kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
		Brokers: []string{"127.0.0.1:1"}, ConsumerGroup: "g", CommitInterval: time.Second,
	}}, nil)
	require.NoError(t, err, "CommitInterval paces the subscriber's own commits")
	require.NoError(t, sub.Close())
	_, err = sub.Subscribe(context.Background(), "t")
	require.ErrorIs(t, err, kafkabroker.ErrSubscriberClosed)
}

// TestParallelBehindMiddlewares: ParallelSubscriber under a plain
// Watermill router with ackgap's chain from router.Middlewares: every
// event applied once, per key in order, everything committed.
func TestParallelBehindMiddlewares(t *testing.T) {
	t.Parallel()
	const n, keys = 500, 50
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, keys)
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		msgs = append(msgs, seqEvent(t, fmt.Sprintf("evt-%03d", i), fmt.Sprintf("k-%d", i%keys), i/keys+1))
	}
	produce(t, topic, -1, msgs)

	rep := &reports{}
	chain, err := router.Middlewares(b.store, "billing", &router.Config{
		DeadLetter: newPublisher(t), DeadLetterTopic: topic + ".dlq",
		InboxConfig: middleware.InboxConfig{Observer: rep.observe},
	})
	require.NoError(t, err)
	wr, err := message.NewRouter(message.RouterConfig{CloseTimeout: 30 * time.Second}, testLogger())
	require.NoError(t, err)
	sub := newParallel(t, group, nil)
	wr.AddConsumerHandler("billing", topic, sub, router.ConsumerHandler(b.apply)).AddMiddleware(chain...)
	runErr := make(chan error, 1)
	go func() { runErr <- wr.Run(context.Background()) }()
	eventually(t, 2*time.Minute, "every event applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	require.NoError(t, wr.Close())
	require.NoError(t, <-runErr)

	b.mu.Lock()
	require.Empty(t, b.violations)
	b.mu.Unlock()
	applied := b.applied(t)
	require.Len(t, applied, n)
	for id, c := range applied {
		require.Equal(t, 1, c, "event %s", id)
	}
	assertNothingRedelivered(t, topic, group)
}

// errorLog is a watermill logger with a warn level (as router.SlogLogger)
// that keeps the errors and warnings it was given, with their fields.
type errorLog struct {
	watermill.LoggerAdapter
	mu   sync.Mutex
	errs []loggedError
}

// loggedError is one Error or Warn record; a Warn record's error is its
// "err" field (kafkabroker passes the error's text there).
type loggedError struct {
	warn   bool
	err    error
	fields watermill.LogFields
}

func (l *errorLog) Error(msg string, err error, fields watermill.LogFields) {
	l.mu.Lock()
	l.errs = append(l.errs, loggedError{err: err, fields: fields})
	l.mu.Unlock()
	l.LoggerAdapter.Error(msg, err, fields)
}

func (l *errorLog) Warn(msg string, fields watermill.LogFields) {
	text, _ := fields["err"].(string)
	l.mu.Lock()
	l.errs = append(l.errs, loggedError{warn: true, err: errors.New(text), fields: fields})
	l.mu.Unlock()
	l.LoggerAdapter.Info(msg, fields.Add(watermill.LogFields{"severity": "warn"}))
}

func (l *errorLog) With(watermill.LogFields) watermill.LoggerAdapter { return l }

// matches reports whether e is target: by errors.Is, or for a warning by
// the error's text.
func (e loggedError) matches(target error) bool {
	return errors.Is(e.err, target) || (e.warn && e.err.Error() == target.Error())
}

func (l *errorLog) has(target error) bool { return len(l.records(target)) > 0 }

// all returns every record, in order.
func (l *errorLog) all() []loggedError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}

// records returns the records logged with target, in order.
func (l *errorLog) records(target error) []loggedError {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loggedError
	for _, e := range l.errs {
		if e.matches(target) {
			out = append(out, e)
		}
	}
	return out
}

// TestParallelOffsetRegression: after the subscriber's commits were
// accepted, something moves the group's committed offset backwards (here
// an operator's reset while the group is empty). When the subscriber
// claims the partition again it reports ErrOffsetRegressed; the records in
// between are delivered again and, once acked, the watermark is committed
// again up to where it was.
func TestParallelOffsetRegression(t *testing.T) {
	t.Parallel()
	const n, resetTo = 20, 5
	topic, group := unique("orders"), unique("billing")
	msgs := make([]*message.Message, 0, n)
	for i := range n {
		msgs = append(msgs, seqEvent(t, fmt.Sprintf("evt-%03d", i), fmt.Sprintf("k-%d", i), 1))
	}
	produce(t, topic, 0, msgs)
	logs := &errorLog{LoggerAdapter: testLogger()}
	sub, err := kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
		Brokers: kafkaBrokers(t), ConsumerGroup: group, HoldTimeout: 20 * time.Second, SessionTimeout: 2 * time.Second,
	}}, logs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })

	consume := func(want int) {
		ctx, cancel := context.WithCancel(context.Background())
		out, err := sub.Subscribe(ctx, topic)
		require.NoError(t, err)
		for got := 0; got < want; got++ {
			select {
			case msg := <-out:
				msg.Ack()
			case <-time.After(time.Minute):
				t.Fatalf("%d of %d messages in 1 min", got, want)
			}
		}
		eventually(t, time.Minute, "the end committed", func() bool { return committedOffset(t, group, topic, 0) == n })
		cancel()
		for range out { // closed once the subscription stopped and left the group
		}
	}
	consume(n)
	require.False(t, logs.has(kafkabroker.ErrOffsetRegressed))

	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	client, err := sarama.NewClient(kafkaBrokers(t), sc)
	require.NoError(t, err)
	defer client.Close()
	om, err := sarama.NewOffsetManagerFromClient(group, client)
	require.NoError(t, err)
	pom, err := om.ManagePartition(topic, 0)
	require.NoError(t, err)
	pom.ResetOffset(resetTo, "")
	om.Commit()
	require.NoError(t, pom.Close())
	require.NoError(t, om.Close())
	require.Equal(t, int64(resetTo), committedOffset(t, group, topic, 0))

	consume(n - resetTo)
	found := logs.records(kafkabroker.ErrOffsetRegressed)
	require.NotEmpty(t, found, "the regression is reported")
	require.True(t, found[0].warn, "at warn")
	require.EqualValues(t, resetTo, found[0].fields["committed"])
	require.EqualValues(t, n, found[0].fields["accepted_before"])
}

// TestParallelOrderingModes: under each ordering mode the subscriber never
// has more handlers running than the mode allows: OrderingPartition one
// per partition, OrderingKey one per key, OrderingUnordered MaxInFlight
// per partition. Every event is applied once; with key and partition
// order, per key in order.
func TestParallelOrderingModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ordering             kafkabroker.Ordering
		perKey, perPartition int
		checkOrder           bool
	}{
		{kafkabroker.OrderingPartition, 1, 1, true},
		{kafkabroker.OrderingKey, 1, 16, true},
		{kafkabroker.OrderingUnordered, 16, 16, false},
	} {
		t.Run(tc.ordering.String(), func(t *testing.T) {
			t.Parallel()
			const n, keys = 600, 30
			topic, group := unique("orders"), unique("billing")
			b := newSeqBackend(t, keys)
			msgs := make([]*message.Message, 0, n)
			for i := range n {
				msgs = append(msgs, seqEvent(t, fmt.Sprintf("evt-%03d", i), fmt.Sprintf("k-%d", i%keys), i/keys+1))
			}
			produce(t, topic, -1, msgs)

			var mu sync.Mutex
			running := map[string]int{}
			peak := map[string]int{}
			enter := func(names ...string) {
				mu.Lock()
				defer mu.Unlock()
				for _, name := range names {
					running[name]++
					peak[name] = max(peak[name], running[name])
				}
			}
			leave := func(names ...string) {
				mu.Lock()
				defer mu.Unlock()
				for _, name := range names {
					running[name]--
				}
			}
			rep := &reports{}
			r, err := router.New(b.store, &router.Config{
				DeadLetter: newPublisher(t), DeadLetterTopic: topic + ".dlq", Logger: testLogger(),
				InboxConfig: middleware.InboxConfig{Observer: rep.observe},
			})
			require.NoError(t, err)
			sub := newParallel(t, group, func(c *kafkabroker.ParallelConfig) {
				c.Ordering = tc.ordering
				c.MaxInFlight = 16
			})
			require.NoError(t, r.AddHandler("billing", topic, sub, func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
				p, _ := kafkabroker.PartitionFromContext(ctx)
				key, _ := kafkabroker.KeyFromContext(ctx)
				names := []string{"key " + string(key), fmt.Sprintf("partition %d", p)}
				enter(names...)
				defer leave(names...)
				time.Sleep(time.Millisecond) // let handlers overlap
				return b.apply(ctx, tx, msg)
			}))
			rn := start(t, r)
			eventually(t, 3*time.Minute, "every event applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
			require.NoError(t, rn.close())

			for name, p := range peak {
				limit := tc.perKey
				if strings.HasPrefix(name, "partition") {
					limit = tc.perPartition
				}
				require.LessOrEqual(t, p, limit, "%s: %d handlers at once", name, p)
			}
			applied := b.applied(t)
			require.Len(t, applied, n)
			for id, c := range applied {
				require.Equal(t, 1, c, "event %s", id)
			}
			if tc.checkOrder {
				b.mu.Lock()
				require.Empty(t, b.violations)
				b.mu.Unlock()
			}
			t.Logf("%s: peak handlers at once %v", tc.ordering, peak)
		})
	}
}
