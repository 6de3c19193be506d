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

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/batch"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/middleware"
)

// batchRun is a BatchConsumer running in the background.
type batchRun struct {
	bc  *kafkabroker.BatchConsumer
	err chan error

	mu      sync.Mutex
	batches [][]string // the event ids of every batch, in the order they ran
}

// runBatches starts a BatchConsumer of topic in group running h through a
// batch.Processor on b's store; it is closed when t ends.
func runBatches(t testing.TB, b *seqBackend, topic, group string, h func(ctx context.Context, tx pgx.Tx, msg *message.Message) error,
	rep *reports, tune func(*kafkabroker.BatchConsumerConfig)) *batchRun {
	t.Helper()
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing", Observer: rep.observe},
		Handler:     h,
	})
	require.NoError(t, err)
	return runBatchFunc(t, topic, group, p.ProcessErrors, tune)
}

// runBatchFunc starts a BatchConsumer of topic in group running fn; it is
// closed when t ends.
func runBatchFunc(t testing.TB, topic, group string, fn kafkabroker.BatchFunc, tune func(*kafkabroker.BatchConsumerConfig)) *batchRun {
	t.Helper()
	cfg := &kafkabroker.BatchConsumerConfig{
		ParallelConfig: kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{
			Brokers:        kafkaBrokers(t),
			ConsumerGroup:  group,
			HoldTimeout:    20 * time.Second,
			SessionTimeout: 2 * time.Second,
			CloseTimeout:   10 * time.Second,
		}},
		Topic:           topic,
		DeadLetter:      newPublisher(t),
		DeadLetterTopic: topic + ".dlq",
	}
	if tune != nil {
		tune(cfg)
	}
	br := &batchRun{err: make(chan error, 1)}
	record := func(ctx context.Context, msgs []*message.Message) []error {
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.Metadata.Get(ackgap.MetadataEventIDKey)
		}
		br.mu.Lock()
		br.batches = append(br.batches, ids)
		br.mu.Unlock()
		return fn(ctx, msgs)
	}
	var err error
	br.bc, err = kafkabroker.NewBatchConsumer(record, cfg, testLogger())
	require.NoError(t, err)
	go func() { br.err <- br.bc.Run(context.Background()) }()
	t.Cleanup(func() { _ = br.close() })
	return br
}

// close closes the consumer and returns Close's or Run's error.
func (br *batchRun) close() error {
	err := br.bc.Close()
	if runErr := <-br.err; runErr != nil && err == nil {
		err = runErr
	}
	br.err <- nil // a second close returns at once
	return err
}

func (br *batchRun) snapshot() [][]string {
	br.mu.Lock()
	defer br.mu.Unlock()
	return slices.Clone(br.batches)
}

// TestBatchConsumerKeyOrder: 4,000 events over 1,000 keys on 4
// partitions, consumed in batched transactions: every key's events are
// applied in offset order (the guarded per-key sequence never skips),
// every event exactly once, and every offset is committed.
func TestBatchConsumerKeyOrder(t *testing.T) {
	t.Parallel()
	const n, keys = 4000, 1000
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, keys)
	produceSeq(t, topic, n, keys)

	rep := &reports{}
	br := runBatches(t, b, topic, group, b.apply, rep, nil)
	eventually(t, 5*time.Minute, "4,000 events applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	require.NoError(t, br.close())

	b.mu.Lock()
	require.Empty(t, b.violations, "events applied out of their key's order")
	b.mu.Unlock()
	for k, seq := range b.seqs(t) {
		require.Equal(t, n/keys, seq, "key %s", k)
	}
	applied := b.applied(t)
	require.Len(t, applied, n)
	for id, c := range applied {
		require.Equal(t, 1, c, "event %s applied %d times", id, c)
	}
	batches := br.snapshot()
	for _, ids := range batches {
		require.LessOrEqual(t, len(ids), kafkabroker.MaxBatchDefault)
	}
	t.Logf("%d events in %d transactions (%.1f per batch)", n, len(batches), float64(n)/float64(len(batches)))
	assertNothingRedelivered(t, topic, group)
}

// TestBatchConsumerFailingMessageMidBatch: one partition, 20 keys and a
// poison event, batches of 20. The first batch is the first 20 records
// (20 keys, nothing of one key twice); in it one event fails twice
// (transient) and the poison event is rejected (ackgap.Permanent). The
// rest of that batch commits; the failing event is retried until it
// applies, before any later event of its key; the poison event is
// dead-lettered with its reason and frees its key. Every other event is
// applied once, in key order, and every offset is committed.
func TestBatchConsumerFailingMessageMidBatch(t *testing.T) {
	t.Parallel()
	const n, keys, flakyAt, poisonAt = 200, 20, 9, 5
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, keys)
	var msgs []*message.Message
	for i := range n {
		if i == poisonAt {
			msgs = append(msgs, seqEvent(t, "evt-poison", "k-poison", 1))
		}
		msgs = append(msgs, seqEvent(t, fmt.Sprintf("evt-%03d", i), fmt.Sprintf("k-%d", i%keys), i/keys+1))
	}
	produce(t, topic, 0, msgs)
	flakyID := fmt.Sprintf("evt-%03d", flakyAt)

	var mu sync.Mutex
	tries := 0
	handler := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		switch msg.Metadata.Get(ackgap.MetadataEventIDKey) {
		case "evt-poison":
			return ackgap.Permanent(ackgap.ReasonInvalidData, errors.New("test: the order does not exist"))
		case flakyID:
			mu.Lock()
			tries++
			try := tries
			mu.Unlock()
			if try <= 2 {
				return errFlaky
			}
		}
		return b.apply(ctx, tx, msg)
	}
	rep := &reports{}
	br := runBatches(t, b, topic, group, handler, rep, func(c *kafkabroker.BatchConsumerConfig) {
		c.MaxBatch = keys
		c.MaxPerKey = 1               // one message per key per batch: the first batch is the first 20 records
		c.BatchWait = 5 * time.Second // the last, partial batch waits that long
		c.Workers = 1
		c.NackResendSleep = 20 * time.Millisecond
	})
	eventually(t, 2*time.Minute, "every event applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	eventually(t, time.Minute, "everything committed", func() bool { return committedOffset(t, group, topic, 0) == n+1 })
	require.NoError(t, br.close())

	first := br.snapshot()[0]
	require.Len(t, first, keys, "the first batch: the first %d records", keys)
	require.Contains(t, first, flakyID)
	require.Contains(t, first, "evt-poison")
	for _, id := range first {
		if id != flakyID && id != "evt-poison" {
			require.Equal(t, ackgap.OutcomeApplied, rep.outcomes(id)[0], "event %s of the failing batch committed", id)
		}
	}
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeFailed, ackgap.OutcomeFailed, ackgap.OutcomeApplied}, rep.outcomes(flakyID))
	require.Equal(t, []ackgap.Outcome{ackgap.OutcomeRejected}, rep.outcomes("evt-poison"))

	b.mu.Lock()
	require.Empty(t, b.violations, "events applied out of their key's order")
	b.mu.Unlock()
	for k, seq := range b.seqs(t) {
		require.Equal(t, n/keys, seq, "key %s", k)
	}
	applied := b.applied(t)
	require.Len(t, applied, n)
	for id, c := range applied {
		require.Equal(t, 1, c, "event %s applied %d times", id, c)
	}
	dl := readAll(t, topic+".dlq", 1)
	require.Equal(t, "evt-poison", dl[0].Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, ackgap.ReasonInvalidData, dl[0].Metadata.Get(ackgap.MetadataDeadLetterReason))
	assertNothingRedelivered(t, topic, group)
}

// TestBatchConsumerConfig: bad settings are named at once.
func TestBatchConsumerConfig(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, []*message.Message) []error { return nil }
	_, err := kafkabroker.NewBatchConsumer(fn, nil, nil)
	require.ErrorContains(t, err, "invalid config")
	_, err = kafkabroker.NewBatchConsumer(nil, &kafkabroker.BatchConsumerConfig{
		ParallelConfig: kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{Brokers: []string{"127.0.0.1:1"}, ConsumerGroup: "g"}},
		MaxBatch:       -1, Workers: -2, MaxAttempts: -3,
	}, nil)
	require.ErrorContains(t, err, "invalid config")
	for _, want := range []string{"BatchFunc is nil", "Topic is empty", "MaxBatch is -1", "Workers is -2", "MaxAttempts is -3", "DeadLetter is nil", "DeadLetterTopic is empty"} {
		require.ErrorContains(t, err, want)
	}
	_, err = kafkabroker.NewBatchConsumer(fn, &kafkabroker.BatchConsumerConfig{MaxBatch: 8, MaxPerKey: 9}, nil)
	require.ErrorContains(t, err, "MaxPerKey is 9, must be at least 1 and at most MaxBatch (8)")
	_, err = kafkabroker.NewBatchConsumer(fn, &kafkabroker.BatchConsumerConfig{MaxPerKey: -1}, nil)
	require.ErrorContains(t, err, "MaxPerKey is -1")
	require.Equal(t, 4, kafkabroker.BatchConsumerConfig{MaxBatch: 4}.WithDefaults().MaxPerKey, "the default is capped by MaxBatch")
	c := kafkabroker.BatchConsumerConfig{}.WithDefaults()
	require.Equal(t, kafkabroker.MaxBatchDefault, c.MaxBatch)
	require.Equal(t, kafkabroker.BatchWaitDefault, c.BatchWait)
	require.Equal(t, kafkabroker.BatchWorkersDefault, c.Workers)
	require.Equal(t, kafkabroker.BatchMaxAttemptsDefault, c.MaxAttempts)
	require.Equal(t, kafkabroker.MaxPerKeyDefault, c.MaxPerKey)
	require.Equal(t, kafkabroker.OrderingKey, c.Ordering)
}

// setStep is a set-based BatchHandler over seqBackend: one UPDATE ...
// FROM unnest moves every message's key from seq-1 to seq and one INSERT
// counts the applied events. A key twice in one call (which rounds rule
// out) would move only one of its rows: it is recorded in twice and
// fails the call.
type setStep struct {
	b *seqBackend

	mu    sync.Mutex
	twice []string
}

func (h *setStep) handle(ctx context.Context, tx pgx.Tx, msgs []*message.Message) error {
	keys, ids := make([]string, len(msgs)), make([]string, len(msgs))
	seqs := make([]int32, len(msgs))
	seen := make(map[string]bool, len(msgs))
	for i, m := range msgs {
		k, seqS, _ := strings.Cut(string(m.Payload), ",")
		seq, err := strconv.Atoi(seqS)
		if err != nil {
			return ackgap.Permanent("", err)
		}
		if seen[k] {
			h.mu.Lock()
			h.twice = append(h.twice, k)
			h.mu.Unlock()
			return fmt.Errorf("key %s twice in one BatchHandler call", k)
		}
		seen[k] = true
		keys[i], seqs[i], ids[i] = k, int32(seq), m.Metadata.Get(ackgap.MetadataEventIDKey)
	}
	tag, err := tx.Exec(ctx, `UPDATE key_seq SET seq = u.seq FROM unnest($1::text[], $2::int[]) AS u(key, seq)
WHERE key_seq.key = u.key AND key_seq.seq = u.seq - 1`, keys, seqs)
	if err != nil {
		return err
	}
	if int(tag.RowsAffected()) != len(msgs) {
		// Some step out of its key's order: the per-message fallback
		// records which.
		return fmt.Errorf("%d of %d steps in order", tag.RowsAffected(), len(msgs))
	}
	_, err = tx.Exec(ctx, `INSERT INTO applied (event_id, n) SELECT unnest($1::text[]), 1
ON CONFLICT (event_id) DO UPDATE SET n = applied.n + 1`, ids)
	return err
}

// hotKeyRecorder wraps a batch.Processor as the BatchFunc and records, per
// batch, the most messages of one key and the rounds the processor ran.
type hotKeyRecorder struct {
	p *batch.Processor[pgx.Tx]

	mu        sync.Mutex
	perKey    []int // per batch: the most messages of one key
	rounds    []int // per batch: Result.Rounds
	heldBack  map[string]int
	ownFailed map[string]int
}

func (r *hotKeyRecorder) process(ctx context.Context, msgs []*message.Message) []error {
	count := map[string]int{}
	most := 0
	for _, m := range msgs {
		k, _ := kafkabroker.KeyFromContext(m.Context())
		count[string(k)]++
		most = max(most, count[string(k)])
	}
	res, _ := r.p.Process(ctx, msgs)
	errs := make([]error, len(msgs))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.perKey = append(r.perKey, most)
	r.rounds = append(r.rounds, res.Rounds)
	for i, m := range res.Messages {
		if m.Outcome == ackgap.OutcomeApplied || m.Outcome == ackgap.OutcomeDuplicate {
			continue
		}
		errs[i] = m.Err
		if errors.Is(m.Err, batch.ErrHeldBack) {
			r.heldBack[m.EventID]++
		} else {
			r.ownFailed[m.EventID]++
		}
	}
	return errs
}

func (r *hotKeyRecorder) snapshot() (perKey, rounds []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.perKey), slices.Clone(r.rounds)
}

// TestBatchConsumerHotKey: 2,000 events, half of them on one key (k-0),
// the rest over 99 keys, consumed in batched transactions with a
// set-based BatchHandler. Every event is applied exactly once and every
// key's events in offset order (the guarded per-key sequence, and a
// BatchHandler that fails on a key seen twice in one call); the hot key's
// events were not one per transaction: with the whole topic as backlog,
// some batch held several of them, applied in as many rounds. Batches
// stay within MaxBatch and MaxPerKey, and every offset is committed.
func TestBatchConsumerHotKey(t *testing.T) {
	t.Parallel()
	const n, keys, perKey = 2000, 100, 8
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, keys)
	msgs := make([]*message.Message, n)
	seqs := map[string]int{}
	for i := range msgs {
		k := "k-0"
		if i%2 == 1 {
			k = fmt.Sprintf("k-%d", 1+(i/2)%(keys-1))
		}
		seqs[k]++
		msgs[i] = seqEvent(t, fmt.Sprintf("evt-%05d", i), k, seqs[k])
	}
	produce(t, topic, -1, msgs)

	rep := &reports{}
	set := &setStep{b: b}
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{
		InboxConfig:  middleware.InboxConfig{Consumer: "billing", Observer: rep.observe},
		BatchHandler: set.handle,
		Handler:      b.apply,
	})
	require.NoError(t, err)
	rec := &hotKeyRecorder{p: p, heldBack: map[string]int{}, ownFailed: map[string]int{}}
	br := runBatchFunc(t, topic, group, rec.process, func(c *kafkabroker.BatchConsumerConfig) { c.MaxPerKey = perKey })
	eventually(t, 5*time.Minute, "2,000 events applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	require.NoError(t, br.close())

	b.mu.Lock()
	require.Empty(t, b.violations, "events applied out of their key's order")
	b.mu.Unlock()
	set.mu.Lock()
	require.Empty(t, set.twice, "a BatchHandler call held one key twice")
	set.mu.Unlock()
	got := b.seqs(t)
	for k, want := range seqs {
		require.Equal(t, want, got[k], "key %s", k)
	}
	applied := b.applied(t)
	require.Len(t, applied, n)
	for id, c := range applied {
		require.Equal(t, 1, c, "event %s applied %d times", id, c)
	}
	require.Zero(t, rep.count(ackgap.OutcomeFailed), "nothing failed, so nothing was held back")

	perKeyMax, rounds := rec.snapshot()
	for i, ids := range br.snapshot() {
		require.LessOrEqual(t, len(ids), kafkabroker.MaxBatchDefault)
		require.LessOrEqual(t, perKeyMax[i], perKey, "batch %d", i)
		require.Equal(t, perKeyMax[i], rounds[i], "batch %d: one round per message of its busiest key", i)
	}
	require.Greater(t, slices.Max(perKeyMax), 1, "no batch held two messages of one key: the hot key ran one message per transaction")
	t.Logf("%d events in %d transactions; most messages of one key per batch %d, rounds per batch up to %d",
		n, len(rounds), slices.Max(perKeyMax), slices.Max(rounds))
	assertNothingRedelivered(t, topic, group)
}

// TestBatchConsumerHotKeyFailure: one partition, 120 events of one key.
// Two consecutive events (seq 40 and 41) each fail twice (transient) with
// MaxAttempts 3. While seq 40 fails, the later events of the key handed
// out with it are held back (batch.ErrHeldBack), nacked and redelivered
// after it, without using their attempts: seq 41, held back and then
// failing twice itself, is still applied, not dead-lettered. Every event
// is applied once, in order, and every offset is committed.
func TestBatchConsumerHotKeyFailure(t *testing.T) {
	t.Parallel()
	const n = 120
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, 1)
	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = seqEvent(t, fmt.Sprintf("evt-%03d", i+1), "k-0", i+1)
	}
	produce(t, topic, 0, msgs)
	flaky := map[string]int{"evt-040": 2, "evt-041": 2} // failures left

	var mu sync.Mutex
	handler := func(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
		mu.Lock()
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		fail := flaky[id] > 0
		if fail {
			flaky[id]--
		}
		mu.Unlock()
		if err := b.apply(ctx, tx, msg); err != nil {
			return err
		}
		if fail {
			return errFlaky // after its writes: the rollback undoes them
		}
		return nil
	}
	rep := &reports{}
	p, err := batch.New[pgx.Tx](b.store, &batch.Config[pgx.Tx]{
		InboxConfig: middleware.InboxConfig{Consumer: "billing", Observer: rep.observe},
		Handler:     handler,
	})
	require.NoError(t, err)
	rec := &hotKeyRecorder{p: p, heldBack: map[string]int{}, ownFailed: map[string]int{}}
	br := runBatchFunc(t, topic, group, rec.process, func(c *kafkabroker.BatchConsumerConfig) {
		c.MaxPerKey = 8
		c.MaxAttempts = 3
		c.NackResendSleep = 50 * time.Millisecond
	})
	eventually(t, 2*time.Minute, "every event applied", func() bool { return rep.count(ackgap.OutcomeApplied) == n })
	eventually(t, time.Minute, "everything committed", func() bool { return committedOffset(t, group, topic, 0) == n })
	require.NoError(t, br.close())

	b.mu.Lock()
	require.Empty(t, b.violations, "events applied out of their key's order")
	b.mu.Unlock()
	require.Equal(t, map[string]int{"k-0": n}, b.seqs(t))
	applied := b.applied(t)
	require.Len(t, applied, n)
	for id, c := range applied {
		require.Equal(t, 1, c, "event %s applied %d times", id, c)
	}
	rec.mu.Lock()
	require.Equal(t, map[string]int{"evt-040": 2, "evt-041": 2}, rec.ownFailed, "only the flaky events failed themselves")
	require.Positive(t, rec.heldBack["evt-041"], "evt-041 was handed out behind evt-040 while it failed, and held back")
	rec.mu.Unlock()
	require.Equal(t, ackgap.OutcomeApplied, rep.outcomes("evt-041")[len(rep.outcomes("evt-041"))-1])
	require.Zero(t, topicSize(t, topic+".dlq"), "held back is no attempt: nothing dead-lettered")
	perKeyMax, _ := rec.snapshot()
	require.Greater(t, slices.Max(perKeyMax), 1)
	assertNothingRedelivered(t, topic, group)
}
