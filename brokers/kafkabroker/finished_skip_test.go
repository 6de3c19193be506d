package kafkabroker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/router"
)

// committedWithFinished returns group's committed offset of topic's
// partition 0 and the finished offsets above it that the commit's
// metadata records.
func committedWithFinished(t testing.TB, group, topic string) (int64, []int64) {
	t.Helper()
	admin := newAdmin(t)
	defer admin.Close()
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0}})
	require.NoError(t, err)
	block := resp.GetBlock(topic, 0)
	require.NotNil(t, block)
	return block.Offset, kafkabroker.DecodeFinished(block.Metadata, block.Offset)
}

// heldWorkload is n events over keys keys on partition 0 (offset i is
// event i, of key k-(i mod keys)); key k-0's second event (offset keys)
// fails as a busy store would until the gate opens, so it holds the
// partition's watermark at offset keys while the other keys finish above
// it.
type heldWorkload struct {
	n, keys int
	b       *seqBackend
	topic   string
	open    atomic.Bool

	mu    sync.Mutex
	calls []string // event ids handed to the handler, in order
}

func newHeldWorkload(t *testing.T) *heldWorkload {
	t.Helper()
	w := &heldWorkload{n: 400, keys: 20, topic: unique("orders")}
	w.b = newSeqBackend(t, w.keys)
	msgs := make([]*message.Message, 0, w.n)
	for i := range w.n {
		msgs = append(msgs, seqEvent(t, w.id(i), fmt.Sprintf("k-%d", i%w.keys), i/w.keys+1))
	}
	produce(t, w.topic, 0, msgs)
	return w
}

func (w *heldWorkload) id(i int) string { return fmt.Sprintf("evt-%05d", i) }

// handle is the handler: it records the call, fails the held event while
// the gate is shut, and applies the event.
func (w *heldWorkload) handle(ctx context.Context, tx pgx.Tx, msg *message.Message) error {
	id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
	w.mu.Lock()
	w.calls = append(w.calls, id)
	w.mu.Unlock()
	if id == w.id(w.keys) && !w.open.Load() {
		return fmt.Errorf("%w: test: the order service is busy", ackgap.ErrStoreUnavailable)
	}
	return w.b.apply(ctx, tx, msg)
}

// takeCalls returns the event ids handled since the last call.
func (w *heldWorkload) takeCalls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.calls
	w.calls = nil
	return out
}

// consumer starts a consumer of the workload in group (a router with a
// ParallelSubscriber, or a BatchConsumer) and returns its close and its
// partitions' stats.
func (w *heldWorkload) consumer(t *testing.T, batched bool, group string) (closeFn func() error, stats func() []kafkabroker.PartitionStats) {
	t.Helper()
	tune := func(c *kafkabroker.ParallelConfig) { c.NackResendSleep = 20 * time.Millisecond }
	if batched {
		br := runBatches(t, w.b, w.topic, group, w.handle, &reports{}, func(c *kafkabroker.BatchConsumerConfig) { tune(&c.ParallelConfig) })
		return br.close, br.bc.Stats
	}
	r, err := router.New(w.b.store, &router.Config{
		DeadLetter: newPublisher(t), DeadLetterTopic: w.topic + ".dlq", Logger: testLogger(), MaxAttempts: 1,
	})
	require.NoError(t, err)
	sub := newParallel(t, group, tune)
	require.NoError(t, r.AddHandler("billing", w.topic, sub, w.handle))
	return start(t, r).close, sub.Stats
}

// TestFinishedOffsetsSkippedAfterClose: a slow key holds partition 0's
// watermark while 360 records finish above it; Close commits the
// watermark with the finished offsets in the commit's metadata, exactly
// the records applied above it (a gap stays a gap). A new consumer in the
// group hands none of them to the handler (PartitionStats.ReplaysSkipped
// counts them): the handler sees only the held key's records from the
// watermark on, and every event is applied exactly once, every key in
// order. Both the key-parallel router and the batched consumer.
func TestFinishedOffsetsSkippedAfterClose(t *testing.T) {
	t.Parallel()
	for _, batched := range []bool{false, true} {
		name := "parallel"
		if batched {
			name = "batch"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newHeldWorkload(t)
			group := unique("billing")
			behind := w.n/w.keys - 1 // the held event and its key's later ones

			closeFirst, _ := w.consumer(t, batched, group)
			eventually(t, 3*time.Minute, "every event not behind the held one applied", func() bool {
				return w.b.appliedCount(t) == w.n-behind
			})
			require.NoError(t, closeFirst())
			w.takeCalls()

			committed, finished := committedWithFinished(t, group, w.topic)
			require.Equal(t, int64(w.keys), committed, "the held event holds the watermark")
			var want []int64
			applied := w.b.applied(t)
			for i := w.keys + 1; i < w.n; i++ {
				if applied[w.id(i)] > 0 {
					want = append(want, int64(i))
				}
			}
			require.Len(t, want, w.n-w.keys-behind)
			require.Equal(t, want, finished, "the commit records exactly the records finished above the watermark")

			w.open.Store(true)
			closeSecond, stats := w.consumer(t, batched, group)
			eventually(t, 3*time.Minute, "every event applied", func() bool { return w.b.appliedCount(t) == w.n })
			eventually(t, time.Minute, "the records skipped", func() bool {
				for _, st := range stats() {
					if st.Partition == 0 {
						return st.ReplaysSkipped == int64(len(want))
					}
				}
				return false
			})
			require.NoError(t, closeSecond())

			var wantCalls []string
			for i := w.keys; i < w.n; i += w.keys {
				wantCalls = append(wantCalls, w.id(i))
			}
			calls := w.takeCalls()
			slices.Sort(calls)
			calls = slices.Compact(calls) // the batched consumer may try the held key's events again
			require.Equal(t, wantCalls, calls, "only the records not finished reach the handler")
			requireAppliedOnceInOrder(t, w.b, w.n, w.keys)
			committed, finished = committedWithFinished(t, group, w.topic)
			require.Equal(t, int64(w.n), committed)
			require.Empty(t, finished)
		})
	}
}

// TestFinishedOffsetsSkippedAfterKill: the same held key in consumer
// processes of their own. Once the commit's metadata records every record
// finished above the held watermark (a commit follows within 100 ms when
// only the finished set grew), the process is killed with SIGKILL: no final
// commit. The next process hands none of the finished records to the inbox
// (no report for any of them), only the held key's from the watermark on,
// and every event is applied exactly once, every key in order: a kill
// replays at most what finished after the last commit, here nothing.
func TestFinishedOffsetsSkippedAfterKill(t *testing.T) {
	t.Parallel()
	for _, batched := range []bool{false, true} {
		name := "parallel"
		if batched {
			name = "batch"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newHeldWorkload(t) // its gate is unused: the child's outage holds the event
			group := unique("billing")
			behind := w.n/w.keys - 1
			proc := consumerProcess{topic: w.topic, group: group, batch: batched, outage: outage{key: "k-0", fromSeq: 2}}

			first := startConsumer(t, w.b, proc)
			eventually(t, 3*time.Minute, "every event not behind the held one applied", func() bool {
				require.True(t, first.Running(), "the first process exited")
				return w.b.appliedCount(t) == w.n-behind
			})
			var want []int64
			applied := w.b.applied(t)
			for i := w.keys + 1; i < w.n; i++ {
				if applied[w.id(i)] > 0 {
					want = append(want, int64(i))
				}
			}
			eventually(t, time.Minute, "the finished records committed in the metadata", func() bool {
				committed, finished := committedWithFinished(t, group, w.topic)
				return committed == int64(w.keys) && slices.Equal(want, finished)
			})
			first.Kill(t)

			w.b.fix(t)
			second := startConsumer(t, w.b, proc)
			eventually(t, 3*time.Minute, "every event applied", func() bool {
				require.True(t, second.Running(), "the second process exited")
				return w.b.appliedCount(t) == w.n
			})
			second.Stop(t, time.Minute)

			requireAppliedOnceInOrder(t, w.b, w.n, w.keys)
			var handled []string
			for id := range outcomes(second) {
				handled = append(handled, id)
			}
			slices.Sort(handled)
			var wantHandled []string
			for i := w.keys; i < w.n; i += w.keys {
				wantHandled = append(wantHandled, w.id(i))
			}
			require.Equal(t, wantHandled, handled, "after the kill only the records not finished reach the inbox")
		})
	}
}
