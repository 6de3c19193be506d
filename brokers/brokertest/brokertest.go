// Package brokertest is the redelivery suite every ackgap broker adapter
// runs (docs/design.md invariant 9), each with an honest [Features] sheet.
//
// It checks what the inbox relies on a broker for: an acked message is not
// delivered again to the group; a nacked one is; messages keep their event
// id and metadata end to end; and a message whose transaction committed in
// a subscriber process killed with SIGKILL before the ack is redelivered to
// the next process and turned into a no-op by the inbox. The crash test
// runs real child processes: the adapter's test binary re-executed, so its
// TestMain must call [RunChildIfRequested] first. The suite depends on no
// store: the adapter passes a [StoreFactory] for the store its routers run
// on (any store; the adapters of this module use SQLite files):
//
//	func TestMain(m *testing.M) {
//		brokertest.RunChildIfRequested(newBroker, storeFactory)
//		goleak.VerifyTestMain(m)
//	}
//
//	func TestRedelivery(t *testing.T) {
//		brokertest.Run(t, &brokertest.Harness[*sql.Tx]{Features: ..., New: newBroker, Store: storeFactory})
//	}
package brokertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/childproc"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
)

// Broker makes publishers and subscribers of one broker. Topic names are
// the suite's (unique per test); an adapter that needs a queue or topic
// created does so in Publisher or Subscriber.
type Broker interface {
	// Publisher returns a publisher; the suite closes it.
	Publisher() (message.Publisher, error)
	// Subscriber returns a subscriber in consumer group group (ignored by
	// brokers whose queue is the group, like SQS); the suite closes it.
	Subscriber(group string) (message.Subscriber, error)
}

// NewBrokerFunc builds the adapter's Broker from the environment (broker
// addresses, endpoints); it runs in the test and in child processes.
type NewBrokerFunc func() (Broker, error)

// Features is what a broker can do, stated honestly; the suite skips, with
// the reason, the checks a broker cannot pass by design.
type Features struct {
	// NackRedelivers: a nacked message is delivered again to the group.
	NackRedelivers bool
	// SurvivesSubscriberCrash: messages a killed subscriber process did not
	// ack are delivered to the next subscriber of the group. False for
	// in-process brokers, whose messages die with the process.
	SurvivesSubscriberCrash bool
	// ConsumerGroups: subscribers of one group share the topic's messages
	// (Kafka partitions), and a member joining mid-stream triggers a
	// rebalance.
	ConsumerGroups bool
	// RedeliveryWait bounds how long the suite waits for a redelivery
	// (after a nack or a crash): e.g. the SQS visibility timeout or the
	// Kafka session timeout, plus slack. Default 30 s.
	RedeliveryWait time.Duration
}

// StoreFactory makes the store the suite's routers run on, for the checks
// that count how often each event was applied (the crash and rebalance
// checks). The test and its child processes share one store, named by a
// DSN. TTx is the store's transaction type.
type StoreFactory[TTx any] struct {
	// Create makes a fresh store for one test, migrated, with a record of
	// applications that Apply writes and Applied reads (no unique key: a
	// second application of an event shows), and returns its DSN. It
	// removes the store when t ends.
	Create func(t *testing.T) (dsn string)
	// Open opens the store at dsn, in the test or a child process, and
	// returns it with the function that closes it.
	Open func(ctx context.Context, dsn string) (store stores.Store[TTx], closeFn func() error, err error)
	// Apply records one application of eventID in tx, the message's
	// transaction.
	Apply func(ctx context.Context, tx TTx, eventID string) error
	// Applied returns how many times each event id was applied in the
	// store at dsn.
	Applied func(ctx context.Context, dsn string) (map[string]int, error)
}

// Harness is an adapter's entry to the suite; TTx is the transaction type
// of Store.
type Harness[TTx any] struct {
	Features Features
	New      NewBrokerFunc
	// Store makes the stores of the crash and rebalance checks. Required
	// when Features.SurvivesSubscriberCrash or Features.ConsumerGroups is
	// set.
	Store StoreFactory[TTx]
}

// Run runs the suite.
func Run[TTx any](t *testing.T, h *Harness[TTx]) {
	if h.Features.RedeliveryWait == 0 {
		h.Features.RedeliveryWait = 30 * time.Second
	}
	t.Run("MetadataEndToEnd", func(t *testing.T) { metadataEndToEnd(t, h) })
	t.Run("AckedIsNotRedelivered", func(t *testing.T) { ackedIsNotRedelivered(t, h) })
	t.Run("NackRedelivers", func(t *testing.T) {
		if !h.Features.NackRedelivers {
			t.Skip("Features.NackRedelivers is false for this broker")
		}
		nackRedelivers(t, h)
	})
	t.Run("RebalanceMidStream", func(t *testing.T) {
		if !h.Features.ConsumerGroups {
			t.Skip("Features.ConsumerGroups is false for this broker")
		}
		rebalanceMidStream(t, h)
	})
	t.Run("SubscriberKilledInAckGap", func(t *testing.T) {
		if !h.Features.SurvivesSubscriberCrash {
			t.Skip("Features.SurvivesSubscriberCrash is false: messages die with an in-process broker")
		}
		killedInAckGap(t, h)
	})
}

func unique(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

func newMessage(eventID, payload string) *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte(payload))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, eventID)
	return msg
}

func open[TTx any](t *testing.T, h *Harness[TTx]) (Broker, message.Publisher) {
	t.Helper()
	b, err := h.New()
	require.NoError(t, err)
	pub, err := b.Publisher()
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	return b, pub
}

// publish publishes msgs one by one on a goroutine of its own, since a
// broker's Publish may wait for the subscriber's ack (GoChannel does); the
// test fails at cleanup if a Publish failed.
func publish(t *testing.T, pub message.Publisher, topic string, msgs ...*message.Message) {
	t.Helper()
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for _, m := range msgs {
			if err := pub.Publish(topic, m); err != nil {
				errs <- err
				return
			}
		}
	}()
	t.Cleanup(func() { require.NoError(t, <-errs, "publish") })
}

func subscribe(t *testing.T, b Broker, group, topic string) (<-chan *message.Message, func()) {
	t.Helper()
	sub, err := b.Subscriber(group)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	msgs, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	var closed bool
	stop := func() {
		if closed {
			return
		}
		closed = true
		cancel()
		require.NoError(t, sub.Close())
	}
	t.Cleanup(stop)
	return msgs, stop
}

func receive(t *testing.T, msgs <-chan *message.Message, wait time.Duration) *message.Message {
	t.Helper()
	select {
	case m, ok := <-msgs:
		require.True(t, ok, "subscription closed")
		return m
	case <-time.After(wait):
		t.Fatalf("no message within %s", wait)
		return nil
	}
}

func metadataEndToEnd[TTx any](t *testing.T, h *Harness[TTx]) {
	b, pub := open(t, h)
	topic := unique("bt-meta")
	msgs, _ := subscribe(t, b, unique("g"), topic)
	msg := newMessage("E1", `{"order_id":"o1"}`)
	msg.Metadata.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	msg.Metadata.Set("tenant", "acme")
	publish(t, pub, topic, msg)
	got := receive(t, msgs, h.Features.RedeliveryWait)
	got.Ack()
	require.Equal(t, `{"order_id":"o1"}`, string(got.Payload))
	for _, k := range []string{ackgap.MetadataEventIDKey, "traceparent", "tenant"} {
		require.Equal(t, msg.Metadata.Get(k), got.Metadata.Get(k), "metadata %q", k)
	}
}

// ackedIsNotRedelivered acks N messages, then reads the group again with a
// new subscriber until a marker published afterwards arrives: none of the
// acked messages may come before it.
func ackedIsNotRedelivered[TTx any](t *testing.T, h *Harness[TTx]) {
	b, pub := open(t, h)
	topic, group := unique("bt-ack"), unique("g")
	const n = 10
	msgs, stop := subscribe(t, b, group, topic)
	var batch []*message.Message
	for i := range n {
		batch = append(batch, newMessage(fmt.Sprintf("A%d", i), "x"))
	}
	publish(t, pub, topic, batch...)
	seen := map[string]bool{}
	for len(seen) < n {
		m := receive(t, msgs, h.Features.RedeliveryWait)
		seen[m.Metadata.Get(ackgap.MetadataEventIDKey)] = true
		require.True(t, m.Ack())
	}
	stop()

	msgs, _ = subscribe(t, b, group, topic)
	publish(t, pub, topic, newMessage("marker", "m"))
	for {
		m := receive(t, msgs, h.Features.RedeliveryWait)
		m.Ack()
		id := m.Metadata.Get(ackgap.MetadataEventIDKey)
		if id == "marker" {
			return
		}
		t.Fatalf("acked message %s was delivered again", id)
	}
}

func nackRedelivers[TTx any](t *testing.T, h *Harness[TTx]) {
	b, pub := open(t, h)
	topic := unique("bt-nack")
	msgs, _ := subscribe(t, b, unique("g"), topic)
	publish(t, pub, topic, newMessage("N1", "payload-n1"))
	first := receive(t, msgs, h.Features.RedeliveryWait)
	require.True(t, first.Nack())
	again := receive(t, msgs, h.Features.RedeliveryWait)
	again.Ack()
	require.Equal(t, "N1", again.Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, "payload-n1", string(again.Payload))
}

// Child process protocol: the role, env variables set by the parent, and
// lines printed by the child on stdout.
const (
	childRole   = "brokertest"
	envDB       = "ACKGAP_BROKERTEST_DB"
	envTopic    = "ACKGAP_BROKERTEST_TOPIC"
	envGroup    = "ACKGAP_BROKERTEST_GROUP"
	envHangOn   = "ACKGAP_BROKERTEST_HANG_ON"
	envDelay    = "ACKGAP_BROKERTEST_DELAY"
	lineReady   = "READY"
	lineHanging = "HANGING"
	lineOutcome = "OUTCOME"
)

// RunChildIfRequested turns the process into a suite child when the
// parent asked for one and exits; it returns at once otherwise. Call it
// first in TestMain.
func RunChildIfRequested[TTx any](newBroker NewBrokerFunc, sf StoreFactory[TTx]) {
	childproc.RunIfRequested(childRole, func() error { return runChild(newBroker, sf) })
}

// runChild consumes the topic with the ackgap router on the SQLite file
// the parent made. Each applied event inserts a row into "applied" (no
// unique key: a second apply would show as a second row). On the event
// named by envHangOn the handler's transaction commits, then the child
// prints HANGING and blocks before the ack until it is killed.
func runChild[TTx any](newBroker NewBrokerFunc, sf StoreFactory[TTx]) error {
	ctx := context.Background()
	store, closeStore, err := sf.Open(ctx, os.Getenv(envDB))
	if err != nil {
		return err
	}
	defer func() { _ = closeStore() }()
	b, err := newBroker()
	if err != nil {
		return err
	}
	sub, err := b.Subscriber(os.Getenv(envGroup))
	if err != nil {
		return err
	}
	hangOn := os.Getenv(envHangOn)
	hang := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, err := h(msg)
			if err == nil && hangOn != "" && msg.Metadata.Get(ackgap.MetadataEventIDKey) == hangOn {
				childproc.Say(lineHanging + " " + hangOn) // committed; the ack never comes
				select {}
			}
			return produced, err
		}
	}
	r, err := router.New(store, &router.Config{
		DeadLetter:  discard{},
		Middlewares: []message.HandlerMiddleware{hang},
		InboxConfig: middleware.InboxConfig{Observer: func(_ context.Context, rep *ackgap.InboxReport) {
			childproc.Say("%s %s %s", lineOutcome, rep.EventID, rep.Outcome)
		}},
	})
	if err != nil {
		return err
	}
	delay, _ := time.ParseDuration(os.Getenv(envDelay))
	err = r.AddHandler("brokertest", os.Getenv(envTopic), sub, func(ctx context.Context, tx TTx, msg *message.Message) error {
		//ackgapvet:ignore sleep the suite simulates slow work inside the transaction, so a rebalance or crash finds messages in flight
		time.Sleep(delay)
		return sf.Apply(ctx, tx, msg.Metadata.Get(ackgap.MetadataEventIDKey))
	})
	if err != nil {
		return err
	}
	go func() {
		<-r.Running()
		childproc.Say(lineReady)
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		_ = r.Close()
	}()
	return r.Run(ctx)
}

// discard is the child's dead-letter publisher: the suite publishes no
// poison, so anything reaching it is a failure the parent sees as a
// missing outcome.
type discard struct{}

func (discard) Publish(string, ...*message.Message) error { return nil }
func (discard) Close() error                              { return nil }

func startChild(t *testing.T, env ...string) *childproc.Child {
	t.Helper()
	return childproc.Start(t, childRole, env...)
}

// waitFor reads the child's lines until one starts with prefix, adding
// the outcomes seen on the way to outcomes.
func waitFor(t *testing.T, c *childproc.Child, prefix string, wait time.Duration, outcomes map[string][]string) {
	t.Helper()
	c.WaitFor(t, wait, func(line string) bool {
		recordOutcome(line, outcomes)
		return strings.HasPrefix(line, prefix)
	})
}

// recordOutcome adds line's outcome to outcomes if it is an OUTCOME line.
func recordOutcome(line string, outcomes map[string][]string) {
	if f := strings.Fields(line); len(f) == 3 && f[0] == lineOutcome {
		outcomes[f[1]] = append(outcomes[f[1]], f[2])
	}
}

// crashDB makes the store the children share, and returns its DSN.
func crashDB[TTx any](t *testing.T, h *Harness[TTx]) string {
	t.Helper()
	require.NotNil(t, h.Store.Create, "Harness.Store is required for this check")
	return h.Store.Create(t)
}

// appliedCounts returns how many times each event was applied.
func appliedCounts[TTx any](t *testing.T, h *Harness[TTx], dsn string) map[string]int {
	t.Helper()
	applied, err := h.Store.Applied(context.Background(), dsn)
	require.NoError(t, err)
	return applied
}

// rebalanceMidStream runs 2,000 events through one consumer process, starts
// a second member of the group part-way (a rebalance moves partitions
// while messages are in flight), and checks every event was applied
// exactly once across both processes.
func rebalanceMidStream[TTx any](t *testing.T, h *Harness[TTx]) {
	dbPath := crashDB(t, h)
	_, pub := open(t, h)
	topic, group := unique("bt-rebalance"), unique("g")
	env := []string{envDB + "=" + dbPath, envTopic + "=" + topic, envGroup + "=" + group, envDelay + "=4ms"}
	const n = 2000
	batch := make([]*message.Message, 0, n)
	for i := range n {
		batch = append(batch, newMessage(fmt.Sprintf("R%04d", i), "r"))
	}
	require.NoError(t, pub.Publish(topic, batch...))

	outcomes := map[string][]string{}
	a := startChild(t, env...)
	waitFor(t, a, lineOutcome, h.Features.RedeliveryWait, outcomes)
	for len(outcomes) < n/4 { // let A get a quarter through, then B joins
		waitFor(t, a, lineOutcome, h.Features.RedeliveryWait, outcomes)
	}
	b := startChild(t, env...)
	deadline := time.Now().Add(4 * h.Features.RedeliveryWait)
	for {
		if counts := appliedCounts(t, h, dbPath); len(counts) == n {
			break
		}
		require.True(t, time.Now().Before(deadline), "not all %d events applied in time", n)
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []*childproc.Child{a, b} {
		c.Stop(t, h.Features.RedeliveryWait)
	}
	byB := 0
	for _, line := range b.Lines() {
		if strings.HasSuffix(line, " applied") {
			byB++
		}
	}
	require.Positive(t, byB, "the second member never got a partition: no rebalance happened")
	t.Logf("rebalance: the second member applied %d of %d events", byB, n)
	counts := appliedCounts(t, h, dbPath)
	require.Len(t, counts, n)
	for id, k := range counts {
		require.Equal(t, 1, k, "event %s applied %d times", id, k)
	}
}

func killedInAckGap[TTx any](t *testing.T, h *Harness[TTx]) {
	dbPath := crashDB(t, h)

	_, pub := open(t, h)
	topic, group := unique("bt-crash"), unique("g")
	env := []string{envDB + "=" + dbPath, envTopic + "=" + topic, envGroup + "=" + group}
	events := []string{"K1", "K2", "K3"}
	for _, id := range events {
		require.NoError(t, pub.Publish(topic, newMessage(id, "payload-"+id)), "a broker that survives a crash does not wait for acks")
	}

	first := startChild(t, append(env, envHangOn+"=K2")...)
	firstOutcomes := map[string][]string{}
	waitFor(t, first, lineHanging, h.Features.RedeliveryWait, firstOutcomes)
	require.Equal(t, []string{"applied"}, firstOutcomes["K2"], "K2 committed in the first process")
	first.Kill(t)
	// What the first process did up to the kill, not only up to the
	// hanging line: a key-parallel consumer may apply (and commit) K1 or
	// K3 after K2 began to hang, and then the second one never sees it.
	firstOutcomes = map[string][]string{}
	for _, line := range first.Lines() {
		recordOutcome(line, firstOutcomes)
	}

	second := startChild(t, env...)
	secondOutcomes := map[string][]string{}
	second.WaitFor(t, h.Features.RedeliveryWait, func(line string) bool {
		recordOutcome(line, secondOutcomes)
		return len(firstOutcomes["K1"])+len(secondOutcomes["K1"]) > 0 && len(firstOutcomes["K3"])+len(secondOutcomes["K3"]) > 0 && len(secondOutcomes["K2"]) > 0
	})
	require.Equal(t, []string{"duplicate"}, secondOutcomes["K2"], "the redelivery of the committed, unacked K2 is a no-op")
	second.Stop(t, h.Features.RedeliveryWait)

	applied := appliedCounts(t, h, dbPath)
	require.Equal(t, map[string]int{"K1": 1, "K2": 1, "K3": 1}, applied, "each event applied exactly once across the crash")
}
