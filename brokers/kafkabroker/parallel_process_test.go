package kafkabroker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/internal/childproc"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// A consumer process of its own: the test binary re-executed (package
// childproc) as a router with a ParallelSubscriber on a seqBackend's
// schema. Its parameters are environment variables; it prints "READY" once
// the router runs and "OUTCOME <event id> <outcome>" per inbox report, and
// stops gracefully on SIGTERM.
const (
	parallelChildRole = "kafkabroker-parallel"
	envChildSchema    = "ACKGAP_KAFKATEST_SCHEMA"
	envChildTopic     = "ACKGAP_KAFKATEST_TOPIC"
	envChildGroup     = "ACKGAP_KAFKATEST_GROUP"
	envChildFailKey   = "ACKGAP_KAFKATEST_FAIL_KEY"
	envChildFailFrom  = "ACKGAP_KAFKATEST_FAIL_FROM_SEQ"
	envChildDelay     = "ACKGAP_KAFKATEST_DELAY"
	envChildMode      = "ACKGAP_KAFKATEST_MODE" // "batch": a BatchConsumer; else a router with a ParallelSubscriber
	envChildSlowKey   = "ACKGAP_KAFKATEST_SLOW_KEY"
	envChildSlowDelay = "ACKGAP_KAFKATEST_SLOW_DELAY"
	lineOutcome       = "OUTCOME"
)

// createFixed is the flag an outage waits for: while the table is empty,
// the handlers of child processes fail the outage's events.
const createFixed = `CREATE TABLE fixed (at TIMESTAMPTZ NOT NULL)`

// outage makes a child's handler fail the events of key whose sequence
// is fromSeq or later, as a busy store would (ackgap.ErrStoreUnavailable:
// nacked and redelivered, never dead-lettered), until the test calls fix.
// The key's first failing event holds its partition's watermark; its later
// events wait behind it in key order.
type outage struct {
	key     string
	fromSeq int
}

func (o outage) env() []string {
	if o.key == "" {
		return nil
	}
	return []string{envChildFailKey + "=" + o.key, envChildFailFrom + "=" + strconv.Itoa(o.fromSeq)}
}

// fix ends every outage on b's schema.
func (b *seqBackend) fix(t testing.TB) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `INSERT INTO fixed (at) VALUES (now())`)
	require.NoError(t, err)
}

// appliedCount returns how many events have been applied (rows, not
// applications).
func (b *seqBackend) appliedCount(t testing.TB) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM applied`).Scan(&n))
	return n
}

// consumerProcess is the configuration of one child consumer process.
type consumerProcess struct {
	topic, group string
	outage       outage
	// delay is how long the handler sleeps inside its transaction: slow
	// work, so a rebalance finds records in flight.
	delay time.Duration
	// batch runs a BatchConsumer (batch.Processor) instead of a router.
	batch bool
	// slowKey's events sleep slowDelay instead of delay: a slow key that
	// holds its partition's watermark while the other keys finish above it.
	slowKey   string
	slowDelay time.Duration
}

// startConsumer starts a consumer process on b's schema and waits until
// its router runs.
func startConsumer(t testing.TB, b *seqBackend, p consumerProcess) *childproc.Child {
	t.Helper()
	env := append([]string{
		envChildSchema + "=" + b.schema, envChildTopic + "=" + p.topic, envChildGroup + "=" + p.group,
		envChildDelay + "=" + p.delay.String(),
		envChildSlowKey + "=" + p.slowKey, envChildSlowDelay + "=" + p.slowDelay.String(),
	}, p.outage.env()...)
	if p.batch {
		env = append(env, envChildMode+"=batch")
	}
	c := childproc.Start(t, parallelChildRole, env...)
	c.WaitFor(t, time.Minute, func(line string) bool { return line == "READY" })
	return c
}

// runParallelChild is the consumer process.
func runParallelChild() error {
	ctx := context.Background()
	pool, err := testdb.Open(ctx, os.Getenv(envChildSchema), 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := pgxstore.New(pool, nil)
	if err != nil {
		return err
	}
	b := &seqBackend{store: store, pool: pool}
	topic, group := os.Getenv(envChildTopic), os.Getenv(envChildGroup)
	failKey := os.Getenv(envChildFailKey)
	failFrom, _ := strconv.Atoi(os.Getenv(envChildFailFrom))
	delay, err := time.ParseDuration(os.Getenv(envChildDelay))
	if err != nil {
		return err
	}

	slowKey := os.Getenv(envChildSlowKey)
	slowDelay, err := time.ParseDuration(os.Getenv(envChildSlowDelay))
	if err != nil {
		return err
	}

	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokersFromEnv()}, testLogger())
	if err != nil {
		return err
	}
	defer pub.Close()
	observe := func(_ context.Context, rep *ackgap.InboxReport) {
		childproc.Say("%s %s %s", lineOutcome, rep.EventID, rep.Outcome)
	}
	handle := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		key, seq, err := keySeq(msg)
		if err != nil {
			return err
		}
		if key == failKey && seq >= failFrom {
			var fixed bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM fixed)`).Scan(&fixed); err != nil {
				return err
			}
			if !fixed {
				return fmt.Errorf("%w: test: the order service is busy", ackgap.ErrStoreUnavailable)
			}
		}
		sleep := delay
		if key == slowKey {
			sleep = slowDelay
		}
		//ackgapvet:ignore sleep the test simulates slow work inside the transaction, so a rebalance finds records in flight
		time.Sleep(sleep)
		return b.apply(ctx, tx, msg)
	}
	cfg := parallelConfig(brokersFromEnv(), group)
	cfg.NackResendSleep = 20 * time.Millisecond
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)

	if os.Getenv(envChildMode) == "batch" {
		p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{
			InboxConfig: middleware.InboxConfig{Consumer: "billing", Observer: observe},
			Handler:     handle,
		})
		if err != nil {
			return err
		}
		bc, err := kafkabroker.NewBatchConsumer(p.ProcessErrors, &kafkabroker.BatchConsumerConfig{
			ParallelConfig: *cfg, Topic: topic, DeadLetter: pub, DeadLetterTopic: topic + ".dlq",
		}, testLogger())
		if err != nil {
			return err
		}
		go func() {
			<-stop
			_ = bc.Close()
		}()
		childproc.Say("READY")
		return bc.Run(ctx)
	}

	r, err := router.New(b.store, &router.Config{
		DeadLetter: pub, DeadLetterTopic: topic + ".dlq", Logger: testLogger(), MaxAttempts: 1,
		InboxConfig: middleware.InboxConfig{Observer: observe},
	})
	if err != nil {
		return err
	}
	sub, err := kafkabroker.NewParallelSubscriber(cfg, testLogger())
	if err != nil {
		return err
	}
	if err := r.AddHandler("billing", topic, sub, handle); err != nil {
		return err
	}
	go func() {
		<-r.Running()
		childproc.Say("READY")
	}()
	go func() {
		<-stop
		_ = r.Close()
	}()
	return r.Run(ctx)
}

// outcomes returns, per event id, the outcomes a consumer process
// reported, in order.
func outcomes(c *childproc.Child) map[string][]ackgap.Outcome {
	out := map[string][]ackgap.Outcome{}
	for _, line := range c.Lines() {
		if f := strings.Fields(line); len(f) == 3 && f[0] == lineOutcome {
			out[f[1]] = append(out[f[1]], ackgap.Outcome(f[2]))
		}
	}
	return out
}

// withOutcome returns the event ids reported with outcome o at least once.
func withOutcome(all map[string][]ackgap.Outcome, o ackgap.Outcome) []string {
	var ids []string
	for id, reported := range all {
		for _, got := range reported {
			if got == o {
				ids = append(ids, id)
				break
			}
		}
	}
	return ids
}

// TestParallelFailedMessageHoldsWatermark: in a consumer process of its
// own, one event in the middle of a partition keeps failing (a busy
// store: nacked, never dead-lettered). Later events of other keys are
// applied; the group's committed offset stays at the failing event however
// many finish after it. The process is killed with SIGKILL, the store is
// fixed, and a fresh process redelivers everything from the committed
// offset: the failing event and its key's events behind it are applied,
// each event the killed process had applied after the failing one is
// skipped (recorded finished in the commit's metadata, or by the inbox as
// a duplicate) and never applied again, nothing below the committed
// offset comes again, and every event is applied once, every key in order.
func TestParallelFailedMessageHoldsWatermark(t *testing.T) {
	t.Parallel()
	const n, keys, failAt = 100, 10, 33
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, keys)
	msgs := make([]*message.Message, 0, n)
	idOf := func(i int) string { return fmt.Sprintf("evt-%03d", i) }
	keyOf := func(i int) string { return fmt.Sprintf("k-%d", i%keys) }
	for i := range n {
		msgs = append(msgs, seqEvent(t, idOf(i), keyOf(i), i/keys+1))
	}
	produce(t, topic, 0, msgs) // one partition: offset i is event i
	offsetOf := map[string]int{}
	for i := range n {
		offsetOf[idOf(i)] = i
	}
	// The failing event and its key's later events, which wait behind it.
	blocked := outage{key: keyOf(failAt), fromSeq: failAt/keys + 1}
	behind := (n - failAt + keys - 1) / keys // events held by the outage
	proc := consumerProcess{topic: topic, group: group, outage: blocked}

	first := startConsumer(t, b, proc)
	eventually(t, 2*time.Minute, "the first process applied every event not behind the failing one", func() bool {
		require.True(t, first.Running(), "the first process exited")
		return b.appliedCount(t) == n-behind
	})
	eventually(t, time.Minute, "the watermark committed", func() bool { return committedOffset(t, group, topic, 0) == failAt })
	first.Kill(t)
	require.Equal(t, int64(failAt), committedOffset(t, group, topic, 0), "the failing event holds the committed offset")
	firstOutcomes := outcomes(first)
	require.Contains(t, firstOutcomes[idOf(failAt)], ackgap.OutcomeFailed, "the failing event was tried")
	var finishedAfter []string // applied by the killed process above the committed offset
	for id := range b.applied(t) {
		if offsetOf[id] > failAt {
			finishedAfter = append(finishedAfter, id)
		}
	}
	require.NotEmpty(t, finishedAfter)

	b.fix(t)
	second := startConsumer(t, b, proc)
	eventually(t, 2*time.Minute, "every event applied", func() bool {
		require.True(t, second.Running(), "the second process exited")
		return b.appliedCount(t) == n
	})
	eventually(t, time.Minute, "everything committed", func() bool { return committedOffset(t, group, topic, 0) == n })
	second.Stop(t, time.Minute)

	requireAppliedOnceInOrder(t, b, n, keys)
	secondOutcomes := outcomes(second)
	duplicates := withOutcome(secondOutcomes, ackgap.OutcomeDuplicate)
	require.Subset(t, finishedAfter, duplicates,
		"the restarted process skips the events the killed one finished after the committed offset: "+
			"without handing them out when the commit's metadata recorded them, else as inbox duplicates")
	for _, id := range finishedAfter {
		require.NotContains(t, secondOutcomes[id], ackgap.OutcomeApplied, "event %s applied again", id)
	}
	require.Len(t, withOutcome(secondOutcomes, ackgap.OutcomeApplied), behind,
		"the restarted process applies the failing event and its key's events behind it")
	for i := range failAt {
		require.Empty(t, secondOutcomes[idOf(i)], "event %s is below the committed offset: not redelivered", idOf(i))
	}
	t.Logf("after the SIGKILL the restarted process skipped %d events applied before it (of %d past the failing one): %d as inbox duplicates, the rest recorded finished in the commit",
		len(finishedAfter), n-failAt-1, len(duplicates))
}

// TestParallelRebalanceKeyOrder: 5,000 events over 500 keys on 4
// partitions, consumed with key parallelism by a consumer process; a
// second process joins the group in the middle of the stream (the first
// cannot finish: one key's last events fail until the test fixes the
// store, after both members own partitions). The revoked partitions
// finish their in-flight records and commit their watermarks before they
// move: every event is applied exactly once across the two processes, and
// every key's events in order; what the new owner is handed again, the
// inbox skips.
func TestParallelRebalanceKeyOrder(t *testing.T) {
	t.Parallel()
	const n, keys = 5000, 500
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, keys)
	produceSeq(t, topic, n, keys)
	proc := consumerProcess{topic: topic, group: group, outage: outage{key: "k-0", fromSeq: n / keys / 2}, delay: 2 * time.Millisecond}

	first := startConsumer(t, b, proc)
	eventually(t, 2*time.Minute, "a fifth of the events applied", func() bool {
		require.True(t, first.Running(), "the first process exited")
		return b.appliedCount(t) >= n/5
	})
	second := startConsumer(t, b, proc)
	eventually(t, time.Minute, "both processes own partitions", func() bool {
		owners := groupAssignment(t, group, topic)
		return len(owners) == 2
	})
	atRebalance := b.appliedCount(t)
	require.Less(t, atRebalance, n, "the second member joined before the stream ended")
	b.fix(t)
	eventually(t, 3*time.Minute, "every event applied", func() bool {
		require.True(t, first.Running() && second.Running(), "a consumer process exited")
		return b.appliedCount(t) == n
	})
	second.Stop(t, time.Minute)
	first.Stop(t, time.Minute)

	requireAppliedOnceInOrder(t, b, n, keys)
	firstOutcomes, secondOutcomes := outcomes(first), outcomes(second)
	byFirst, bySecond := withOutcome(firstOutcomes, ackgap.OutcomeApplied), withOutcome(secondOutcomes, ackgap.OutcomeApplied)
	require.Len(t, append(byFirst, bySecond...), n, "each event reported applied by one process, once")
	t.Logf("%d events applied when the second process got its partitions; then the first applied %d in all, the second %d; duplicates skipped: %d and %d",
		atRebalance, len(byFirst), len(bySecond),
		len(withOutcome(firstOutcomes, ackgap.OutcomeDuplicate)), len(withOutcome(secondOutcomes, ackgap.OutcomeDuplicate)))
	assertNothingRedelivered(t, topic, group)
}

// groupAssignment returns, per member of group in a stable state, the
// partitions of topic it owns; members without one are left out. It
// returns nil while the group rebalances.
func groupAssignment(t testing.TB, group, topic string) map[string][]int32 {
	t.Helper()
	admin := newAdmin(t)
	defer admin.Close()
	groups, err := admin.DescribeConsumerGroups([]string{group})
	require.NoError(t, err)
	require.Len(t, groups, 1)
	g := groups[0]
	if !errors.Is(g.Err, sarama.ErrNoError) {
		require.NoError(t, g.Err)
	}
	if g.State != "Stable" {
		return nil
	}
	out := map[string][]int32{}
	for id, m := range g.Members {
		a, err := m.GetMemberAssignment()
		require.NoError(t, err)
		if a != nil && len(a.Topics[topic]) > 0 {
			out[id] = a.Topics[topic]
		}
	}
	return out
}
