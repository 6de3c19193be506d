package kafkabroker_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/internal/childproc"
)

// replayWorkload is the load TestReplaysPerStop runs: n events over keys
// keys on the topic's partitions, every handler call taking delay, the
// events of key slowKey slowDelay: that key holds its partition's
// watermark while the other keys finish above it.
type replayWorkload struct {
	n, keys   int
	delay     time.Duration
	slowKey   string
	slowDelay time.Duration
}

var replayLoad = replayWorkload{n: 3000, keys: 100, delay: 2 * time.Millisecond, slowKey: "k-0", slowDelay: 150 * time.Millisecond}

// replayStops is how many stops each cell of TestReplaysPerStop makes:
// ACKGAP_REPLAY_STOPS, default 1.
func replayStops(t testing.TB) int {
	t.Helper()
	s := os.Getenv("ACKGAP_REPLAY_STOPS")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	require.Positive(t, n)
	return n
}

// TestReplaysPerStop measures what a stop costs the next consumer process:
// the events already applied before the stop whose records the next
// process hands to the inbox again (each one a replay, skipped as a
// duplicate). Each cell (key-parallel router or batched consumer; SIGTERM
// or SIGKILL) runs replayLoad in consumer processes of its own, stopping
// one process in the middle of the load ACKGAP_REPLAY_STOPS times (default
// 1) and starting the next, and logs the replays per stop. It asserts
// what holds whatever the timing: every event applied exactly once, every
// key in order, and nothing applied before a graceful stop replayed.
func TestReplaysPerStop(t *testing.T) {
	t.Parallel()
	stops := replayStops(t)
	for _, batched := range []bool{false, true} {
		for _, kill := range []bool{false, true} {
			mode, how := "parallel", "sigterm"
			if batched {
				mode = "batch"
			}
			if kill {
				how = "sigkill"
			}
			t.Run(mode+"/"+how, func(t *testing.T) {
				t.Parallel()
				replays := measureReplays(t, batched, kill, stops)
				total := 0
				for _, r := range replays {
					total += r
				}
				load, _ := os.ReadFile("/proc/loadavg")
				t.Logf("REPLAYS mode=%s stop=%s stops=%d per_stop=%v mean=%.1f loadavg=%s",
					mode, how, len(replays), replays, float64(total)/float64(len(replays)), strings.Fields(string(load) + " ?")[0])
				if !kill {
					for i, r := range replays {
						require.Zero(t, r, "stop %d: a graceful stop commits every finished record; none replayed", i)
					}
				}
			})
		}
	}
}

// measureReplays runs replayLoad through stops+1 consumer processes, the
// first stops of them stopped (SIGKILL with kill, else SIGTERM) in the
// middle of the load, and returns per stop how many events applied before
// it the next process handed to the inbox again.
func measureReplays(t *testing.T, batched, kill bool, stops int) []int {
	t.Helper()
	w := replayLoad
	topic, group := unique("orders"), unique("billing")
	b := newSeqBackend(t, w.keys)
	produceSeq(t, topic, w.n, w.keys)
	proc := consumerProcess{topic: topic, group: group, delay: w.delay, batch: batched, slowKey: w.slowKey, slowDelay: w.slowDelay}

	var procs []*childproc.Child
	var appliedAt []map[string]int // the events applied when stop i ended
	for i := range stops {
		c := startConsumer(t, b, proc)
		procs = append(procs, c)
		// Each process applies a share of what is left, so the last
		// stopped one still stops in the middle of the load.
		from := b.appliedCount(t)
		target := from + max((w.n-from)/(stops+1-i), 1)/2
		eventually(t, 3*time.Minute, fmt.Sprintf("process %d applied events up to %d (from %d)", i, target, from), func() bool {
			require.True(t, c.Running(), "process %d exited", i)
			return b.appliedCount(t) >= target
		})
		if kill {
			c.Kill(t)
		} else {
			c.Stop(t, time.Minute)
		}
		appliedAt = append(appliedAt, b.applied(t))
	}
	last := startConsumer(t, b, proc)
	procs = append(procs, last)
	eventually(t, 5*time.Minute, "every event applied", func() bool {
		require.True(t, last.Running(), "the last process exited")
		return b.appliedCount(t) == w.n
	})
	last.Stop(t, time.Minute)
	requireAppliedOnceInOrder(t, b, w.n, w.keys)

	replays := make([]int, stops)
	for i := range stops {
		for id := range outcomes(procs[i+1]) {
			if appliedAt[i][id] > 0 {
				replays[i]++
			}
		}
	}
	return replays
}
