package kafkabroker_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/childproc"
	"github.com/ackgap/ackgap/internal/mysqlbrokertest"
	"github.com/ackgap/ackgap/internal/sqlitebrokertest"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

func TestMain(m *testing.M) {
	brokertest.RunChildIfRequested(newSuiteBroker, mysqlbrokertest.Or(sqlitebrokertest.Store()))
	childproc.RunIfRequested(parallelChildRole, runParallelChild)
	childproc.RunIfRequested(restartRole, runRestartCommand)
	goleak.VerifyTestMain(m,
		// Sarama registers go-metrics meters; go-metrics ticks every meter
		// from one package-level goroutine that it starts with the first
		// meter and never stops (rcrowley/go-metrics meter.go, arbiter).
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
		// Watermill's Pub/Sub test suite (TestWatermillPubSubSuite) fans
		// subscribers into one channel with a helper whose goroutines block
		// once the test stops reading (watermill internal/subscriber
		// multiplier.go); they belong to the suite, not to kafkabroker.
		goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill/internal/subscriber.(*multiplier).Subscribe.func2"),
		goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill/internal/subscriber.(*multiplier).Subscribe.func3"),
		// Watermill's TestReconnect (run with KAFKABROKER_WATERMILL_RECONNECT=1)
		// collects published messages in a goroutine ranging over a channel it
		// never closes (pubsub/tests/test_pubsub.go).
		goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill/pubsub/tests.TestReconnect.func2"),
	)
}

// brokersEnvDefault is where tools/brokers.sh start runs kfake.
const brokersEnvDefault = "127.0.0.1:9092"

var (
	brokersOnce sync.Once
	brokersList []string
	brokersErr  error
)

// kafkaBrokers returns KAFKA_BROKERS (default 127.0.0.1:9092), failing the
// test when the first one does not accept TCP: these tests need a real
// Kafka-protocol broker and never skip.
func kafkaBrokers(t testing.TB) []string {
	t.Helper()
	brokersOnce.Do(func() {
		brokersList = brokersFromEnv()
		c, err := net.DialTimeout("tcp", brokersList[0], 2*time.Second)
		if err != nil {
			brokersErr = err
			return
		}
		_ = c.Close()
	})
	if brokersErr != nil {
		t.Fatalf("Kafka broker %s (KAFKA_BROKERS, default %s) is unreachable: %v\n"+
			"\tstart the local broker with: tools/brokers.sh install && tools/brokers.sh start",
			brokersList[0], brokersEnvDefault, brokersErr)
	}
	return brokersList
}

// brokersFromEnv returns KAFKA_BROKERS, default 127.0.0.1:9092, split at
// commas; child processes, which have no testing.TB, use it directly.
func brokersFromEnv() []string {
	env := os.Getenv("KAFKA_BROKERS")
	if env == "" {
		env = brokersEnvDefault
	}
	return strings.Split(env, ",")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// unique returns prefix with a random suffix: a topic or group of the
// test's own.
func unique(prefix string) string { return prefix + "." + randomHex(6) }

func testLogger() watermill.LoggerAdapter {
	if os.Getenv("KAFKABROKER_TEST_LOG") != "" {
		return watermill.NewStdLogger(true, false)
	}
	return watermill.NopLogger{}
}

// newPublisher returns a publisher closed when t ends.
func newPublisher(t testing.TB) *kafka.Publisher {
	t.Helper()
	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: kafkaBrokers(t)}, testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	return pub
}

// newSubscriber returns a subscriber in group, closed when t ends. The
// session timeout is short so an unclean end costs the next member little.
func newSubscriber(t testing.TB, group string, tune func(*kafkabroker.SubscriberConfig)) *kafkabroker.Subscriber {
	t.Helper()
	cfg := &kafkabroker.SubscriberConfig{
		Brokers:        kafkaBrokers(t),
		ConsumerGroup:  group,
		HoldTimeout:    20 * time.Second,
		SessionTimeout: 2 * time.Second,
		CloseTimeout:   10 * time.Second,
	}
	if tune != nil {
		tune(cfg)
	}
	sub, err := kafkabroker.NewSubscriber(cfg, testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// event returns a message with event id id, a partition key and a W3C
// trace context, as a producer would publish it.
func event(t testing.TB, id, partitionKey string) *message.Message {
	t.Helper()
	msg, err := kafkabroker.NewEvent(id, []byte(`{"id":"`+id+`"}`))
	require.NoError(t, err)
	if partitionKey != "" {
		msg.Metadata.Set(kafkabroker.MetadataPartitionKey, partitionKey)
	}
	msg.Metadata.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	msg.Metadata.Set("tenant", "acme")
	return msg
}

// The stores' transaction types.
type (
	TTxSQL = *sql.Tx
	TTxPG  = pgx.Tx
)

// backend is a store plus a business table "applied" that counts how many
// times each event was applied.
type backend[TTx any] struct {
	store stores.Store[TTx]
	// apply adds one application of eventID in tx.
	apply func(ctx context.Context, tx TTx, eventID string) error
	// applied returns the count per event id, committed rows only.
	applied func(t testing.TB) map[string]int
}

const createApplied = `CREATE TABLE applied (event_id TEXT PRIMARY KEY, n INTEGER NOT NULL)`

func sqliteBackend(t testing.TB) backend[*sql.Tx] {
	t.Helper()
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, createApplied)
	require.NoError(t, err)
	return backend[*sql.Tx]{
		store: store,
		apply: func(ctx context.Context, tx *sql.Tx, id string) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO applied (event_id, n) VALUES (?, 1)
ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, id)
			return err
		},
		applied: func(t testing.TB) map[string]int {
			rows, err := store.DB().QueryContext(context.Background(), `SELECT event_id, n FROM applied`)
			require.NoError(t, err)
			return collect(t, rows.Next, rows.Scan, rows.Close, rows.Err)
		},
	}
}

func pgBackend(t testing.TB) backend[pgx.Tx] {
	t.Helper()
	pool, _ := testdb.Schema(t, 8)
	store, err := pgxstore.New(pool, nil)
	require.NoError(t, err)
	return pgBackendOn(t, pool, store)
}

// pgBackendOn is pgBackend on store, whose pool is pool.
func pgBackendOn(t testing.TB, pool *pgxpool.Pool, store *pgxstore.Store) backend[pgx.Tx] {
	t.Helper()
	ctx := context.Background()
	_, err := store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, createApplied)
	require.NoError(t, err)
	return backend[pgx.Tx]{
		store: store,
		apply: func(ctx context.Context, tx pgx.Tx, id string) error {
			_, err := tx.Exec(ctx, `INSERT INTO applied (event_id, n) VALUES ($1, 1)
ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, id)
			return err
		},
		applied: func(t testing.TB) map[string]int {
			rows, err := pool.Query(context.Background(), `SELECT event_id, n FROM applied`)
			require.NoError(t, err)
			return collect(t, rows.Next, rows.Scan, func() error { rows.Close(); return nil }, rows.Err)
		},
	}
}

func collect(t testing.TB, next func() bool, scan func(...any) error, closeRows func() error, rowsErr func() error) map[string]int {
	t.Helper()
	out := map[string]int{}
	for next() {
		var id string
		var n int
		require.NoError(t, scan(&id, &n))
		out[id] = n
	}
	require.NoError(t, rowsErr())
	require.NoError(t, closeRows())
	return out
}

// reports collects the inbox's ackgap.InboxReport per delivery.
type reports struct {
	mu  sync.Mutex
	all []ackgap.InboxReport
}

func (r *reports) observe(_ context.Context, rep *ackgap.InboxReport) {
	r.mu.Lock()
	r.all = append(r.all, *rep)
	r.mu.Unlock()
}

// outcomes returns the outcomes seen for eventID, in order.
func (r *reports) outcomes(eventID string) []ackgap.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ackgap.Outcome
	for _, rep := range r.all {
		if rep.EventID == eventID {
			out = append(out, rep.Outcome)
		}
	}
	return out
}

// count returns how many deliveries had outcome o.
func (r *reports) count(o ackgap.Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rep := range r.all {
		if rep.Outcome == o {
			n++
		}
	}
	return n
}

func (r *reports) snapshot() []ackgap.InboxReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ackgap.InboxReport(nil), r.all...)
}

// running is a router started by start.
type running struct {
	close func() error
	err   chan error
}

// start runs r until its close is called (or t ends).
func start[TTx any](t testing.TB, r *router.Router[TTx]) *running {
	t.Helper()
	rn := &running{err: make(chan error, 1)}
	go func() { rn.err <- r.Run(context.Background()) }()
	select {
	case <-r.Running():
	case err := <-rn.err:
		t.Fatalf("router stopped before running: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("router not running after 30s")
	}
	var once sync.Once
	var closeErr error
	rn.close = func() error {
		once.Do(func() {
			closeErr = r.Close()
			if err := <-rn.err; err != nil && closeErr == nil {
				closeErr = err
			}
		})
		return closeErr
	}
	t.Cleanup(func() { _ = rn.close() })
	return rn
}

// eventually polls cond every 10 ms until it holds or within passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertNothingRedelivered proves that group has committed everything on
// topic: it writes a sentinel into every partition, joins group, and reads
// until every sentinel arrived. Offsets are ordered within a partition, so
// a message that was not committed would arrive before its partition's
// sentinel. No timing is asserted: the wait ends with the last sentinel.
func assertNothingRedelivered(t testing.TB, topic, group string) {
	t.Helper()
	brokers := kafkaBrokers(t)
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	sc.Producer.Return.Successes = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	client, err := sarama.NewClient(brokers, sc)
	require.NoError(t, err)
	defer client.Close()
	partitions, err := client.Partitions(topic)
	require.NoError(t, err)
	require.NotEmpty(t, partitions)
	producer, err := sarama.NewSyncProducerFromClient(client)
	require.NoError(t, err)
	defer producer.Close()
	for _, p := range partitions {
		id := fmt.Sprintf("sentinel-%d", p)
		_, _, err := producer.SendMessage(&sarama.ProducerMessage{
			Topic: topic, Partition: p, Value: sarama.StringEncoder(id),
			Headers: []sarama.RecordHeader{{Key: []byte(ackgap.MetadataEventIDKey), Value: []byte(id)}},
		})
		require.NoError(t, err)
	}

	sub := newSubscriber(t, group, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msgs, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	seen := map[string]bool{}
	var redelivered []string
	timeout := time.After(60 * time.Second)
	for len(seen) < len(partitions) {
		select {
		case msg, ok := <-msgs:
			require.True(t, ok, "subscription closed early")
			id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
			if strings.HasPrefix(id, "sentinel-") {
				seen[id] = true
			} else {
				redelivered = append(redelivered, id)
			}
			msg.Ack()
		case <-timeout:
			t.Fatalf("group %s: sentinels seen %v of %d partitions after 60s", group, seen, len(partitions))
		}
	}
	require.NoError(t, sub.Close())
	require.Empty(t, redelivered, "group %s re-read messages whose offsets should have been committed", group)
}

// readAll reads n messages of topic with a group of its own, acking them.
func readAll(t testing.TB, topic string, n int) []*message.Message {
	t.Helper()
	sub := newSubscriber(t, unique("reader"), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msgs, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	var out []*message.Message
	timeout := time.After(60 * time.Second)
	for len(out) < n {
		select {
		case msg := <-msgs:
			out = append(out, msg)
			msg.Ack()
		case <-timeout:
			t.Fatalf("read %d of %d messages from %s in 60s", len(out), n, topic)
		}
	}
	require.NoError(t, sub.Close())
	return out
}

var errFlaky = errors.New("flaky dependency")

// topicSize returns how many records topic holds (creating it, empty, if
// it does not exist).
func topicSize(t testing.TB, topic string) int64 {
	t.Helper()
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	client, err := sarama.NewClient(kafkaBrokers(t), sc)
	require.NoError(t, err)
	defer client.Close()
	partitions, err := client.Partitions(topic)
	require.NoError(t, err)
	var n int64
	for _, p := range partitions {
		newest, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		require.NoError(t, err)
		oldest, err := client.GetOffset(topic, p, sarama.OffsetOldest)
		require.NoError(t, err)
		n += newest - oldest
	}
	return n
}
