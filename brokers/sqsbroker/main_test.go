package sqsbroker_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/internal/childproc"
	"github.com/ackgap/ackgap/internal/mysqlbrokertest"
	"github.com/ackgap/ackgap/internal/sqlitebrokertest"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

func TestMain(m *testing.M) {
	childproc.RunIfRequested(roleBatchChild, runBatchChild)
	brokertest.RunChildIfRequested(newSuiteBroker, mysqlbrokertest.Or(sqlitebrokertest.Store()))
	goleak.VerifyTestMain(m)
}

// endpointDefault is where tools/brokers.sh start runs fauxqs.
const endpointDefault = "http://127.0.0.1:4566"

var (
	endpointOnce sync.Once
	endpointURL  string
	endpointErr  error
)

// endpoint returns SQS_ENDPOINT (default endpointDefault), failing the
// test when fauxqs does not answer: these tests need a real SQS server
// and never skip.
func endpoint(t testing.TB) string {
	t.Helper()
	endpointOnce.Do(func() {
		endpointURL = os.Getenv("SQS_ENDPOINT")
		if endpointURL == "" {
			endpointURL = endpointDefault
		}
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 2 * time.Second}
		resp, err := c.Get(endpointURL + "/health")
		if err != nil {
			endpointErr = err
			return
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			endpointErr = fmt.Errorf("GET /health: %s", resp.Status)
		}
	})
	if endpointErr != nil {
		t.Fatalf("SQS endpoint %s (SQS_ENDPOINT, default %s) is unreachable: %v\n"+
			"\tstart the local SQS server (fauxqs) with: tools/brokers.sh install && tools/brokers.sh start",
			endpointURL, endpointDefault, endpointErr)
	}
	return endpointURL
}

// optFns points an SQS client at the local server with static test
// credentials, over an HTTP transport of the test's own whose idle
// connections are closed when t ends (goleak).
func optFns(t testing.TB) []func(*sqs.Options) {
	t.Helper()
	return optFnsAt(t, endpoint(t))
}

// optFnsAt is optFns for the server at ep.
func optFnsAt(t testing.TB, ep string) []func(*sqs.Options) {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	httpClient := &http.Client{Transport: tr}
	return []func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(ep)
		o.Region = "us-east-1"
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "sqsbroker tests"}, nil
		})
		o.HTTPClient = httpClient
	}}
}

// client returns an SQS client for the test's own checks.
func client(t testing.TB) *sqs.Client {
	return sqs.New(sqs.Options{}, optFns(t)...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createQueue creates a queue named prefix-<random> (with the ".fifo"
// suffix for a FIFO queue) with the given visibility timeout and extra
// attributes, deleted when t ends, and returns its name and URL.
func createQueue(t testing.TB, c *sqs.Client, prefix string, visibility time.Duration, attrs map[string]string) (string, string) {
	t.Helper()
	name := prefix + "-" + randomHex(6)
	if attrs["FifoQueue"] == "true" {
		name += ".fifo"
	}
	all := map[string]string{"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second))}
	for k, v := range attrs {
		all[k] = v
	}
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: all})
	require.NoError(t, err)
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	return name, url
}

// queueArn returns a queue's ARN.
func queueArn(t testing.TB, c *sqs.Client, url string) string {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	require.NoError(t, err)
	return out.Attributes["QueueArn"]
}

// queueCounts returns ApproximateNumberOfMessages (visible) and
// ApproximateNumberOfMessagesNotVisible (in flight).
func queueCounts(t testing.TB, c *sqs.Client, url string) (visible, inFlight int) {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	require.NoError(t, err)
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	inFlight, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, inFlight
}

func testLogger() watermill.LoggerAdapter {
	if os.Getenv("SQSBROKER_TEST_LOG") != "" {
		return watermill.NewStdLogger(true, false)
	}
	return watermill.NopLogger{}
}

// newPublisher returns an ackgap publisher on the local server.
func newPublisher(t testing.TB) message.Publisher {
	t.Helper()
	pub, err := sqsbroker.NewPublisher(&sqsbroker.PublisherConfig{OptFns: optFns(t)}, testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	return pub
}

// event returns a message with event id id, a W3C trace context and one
// more metadata key, as a producer would publish it.
func event(id string) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(`{"id":"`+id+`"}`))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, id)
	msg.Metadata.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	msg.Metadata.Set("tenant", "acme")
	return msg
}

// newSubscriber returns a subscriber on queue, closed when t ends.
func newSubscriber(t testing.TB, queue string, tune func(*sqsbroker.SubscriberConfig)) *sqsbroker.Subscriber {
	t.Helper()
	cfg := &sqsbroker.SubscriberConfig{OptFns: optFns(t), Queue: queue, AttemptTimeout: 5 * time.Second, CloseTimeout: 10 * time.Second}
	if tune != nil {
		tune(cfg)
	}
	sub, err := sqsbroker.NewSubscriber(context.Background(), cfg, testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// backend is a migrated SQLite store with a business table "applied" that
// counts how many times each event was applied.
type backend struct {
	store *sqlitestore.Store
}

func newBackend(t testing.TB) *backend {
	t.Helper()
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	_, err = store.DB().ExecContext(ctx, `CREATE TABLE applied (event_id TEXT PRIMARY KEY, n INTEGER NOT NULL)`)
	require.NoError(t, err)
	return &backend{store: store}
}

// apply records one application of the message's event in tx.
func apply(ctx context.Context, tx *sql.Tx, _ *message.Message) error {
	id, _ := ackgap.EventIDFromContext(ctx)
	_, err := tx.ExecContext(ctx, `INSERT INTO applied (event_id, n) VALUES (?, 1)
ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, id)
	return err
}

// applied returns the committed count per event id.
func (b *backend) applied(t testing.TB) map[string]int {
	t.Helper()
	rows, err := b.store.DB().QueryContext(context.Background(), `SELECT event_id, n FROM applied`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		require.NoError(t, rows.Scan(&id, &n))
		out[id] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// observed collects inbox reports and the subscriber's ack reports.
type observed struct {
	mu    sync.Mutex
	inbox []ackgap.InboxReport
	acks  []ackReport
}

func (o *observed) observeInbox(_ context.Context, r *ackgap.InboxReport) {
	o.mu.Lock()
	o.inbox = append(o.inbox, *r)
	o.mu.Unlock()
}

func (o *observed) observeAck(_ context.Context, d *ackgap.Delivery) {
	r := ackOf(d)
	o.mu.Lock()
	o.acks = append(o.acks, r)
	o.mu.Unlock()
}

// ackReport is one settled message as these tests read it, flattened from
// its ackgap.Delivery and the Delivery's Settlement.
type ackReport struct {
	d                                       *ackgap.Delivery
	Queue, MessageID, EventID               string
	ReceiveCount, BatchSize                 int
	Received, HandedOut, Settled, Confirmed time.Time // Confirmed: the settlement's Answered
	LeaseDeadline                           time.Time
	Extensions                              int
	LeaseLost                               bool
	Outcome                                 ackgap.SettleOutcome
	Err                                     error // the settlement's AdapterErr
}

func ackOf(d *ackgap.Delivery) ackReport {
	s, _ := d.Settlement()
	return ackReport{d: d, Queue: d.Destination, MessageID: d.MessageID, EventID: d.EventID,
		ReceiveCount: d.ReceiveCount, BatchSize: d.BatchSize, Received: d.Received, HandedOut: s.HandedOut,
		Settled: s.At, Confirmed: s.Answered, LeaseDeadline: s.LeaseDeadline, Extensions: s.LeaseExtensions,
		LeaseLost: s.LeaseLost, Outcome: s.Outcome, Err: s.AdapterErr}
}

func (r ackReport) LeaseHeadroom() time.Duration { return r.d.LeaseHeadroom() }
func (r ackReport) LeaseExpired() bool           { return r.d.LeaseExpired() }

// outcomes returns how many deliveries had each inbox outcome.
func (o *observed) outcomes() map[ackgap.Outcome]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[ackgap.Outcome]int{}
	for _, r := range o.inbox {
		out[r.Outcome]++
	}
	return out
}

func (o *observed) ackReports() []ackReport {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]ackReport(nil), o.acks...)
}

// waitAcks waits until at least n ack reports arrived.
func (o *observed) waitAcks(t testing.TB, n int, within time.Duration) []ackReport {
	t.Helper()
	eventually(t, within, fmt.Sprintf("%d ack reports", n), func() bool { return len(o.ackReports()) >= n })
	return o.ackReports()
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

// running is a router started by runRouter.
type running struct {
	r    *router.Router[*sql.Tx]
	done chan error
	once sync.Once
	err  error
}

// close closes the router and waits for Run to return.
func (rn *running) close() error {
	rn.once.Do(func() {
		rn.err = rn.r.Close()
		if err := <-rn.done; err != nil && rn.err == nil {
			rn.err = err
		}
	})
	return rn.err
}

// runRouter runs a router on b with h as consumer "c1" of sub's queue,
// reporting to o, until its close (or the end of t). cfg.DeadLetter
// defaults to an in-memory GoChannel.
func runRouter(t testing.TB, b *backend, sub *sqsbroker.Subscriber, cfg router.Config, o *observed, h router.HandlerFunc[*sql.Tx]) *running {
	t.Helper()
	if cfg.DeadLetter == nil {
		dead := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
		t.Cleanup(func() { _ = dead.Close() })
		cfg.DeadLetter = dead
	}
	cfg.Observer = o.observeInbox
	cfg.Logger = testLogger()
	if cfg.HandlerTimeout == 0 {
		cfg.HandlerTimeout = 5 * time.Second
	}
	if cfg.RetryInitialInterval == 0 {
		cfg.RetryInitialInterval, cfg.RetryMaxInterval = time.Millisecond, 5*time.Millisecond
	}
	r, err := router.New[*sql.Tx](b.store, &cfg)
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("c1", sub.Queue().Name, sub, h))
	rn := &running{r: r, done: make(chan error, 1)}
	go func() { rn.done <- r.Run(context.Background()) }()
	select {
	case <-r.Running():
	case err := <-rn.done:
		t.Fatalf("router stopped before running: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("router not running after 10s")
	}
	t.Cleanup(func() { _ = rn.close() })
	return rn
}

// headroom summarises the lease headroom of reports with a confirmation.
func headroom(reps []ackReport) (lo, hi time.Duration) {
	var hs []time.Duration
	for _, r := range reps {
		if !r.Confirmed.IsZero() {
			hs = append(hs, r.LeaseHeadroom())
		}
	}
	if len(hs) == 0 {
		return 0, 0
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
	return hs[0], hs[len(hs)-1]
}
