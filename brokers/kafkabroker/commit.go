package kafkabroker

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"

	"github.com/ackgap/ackgap"
)

// ErrCommitRefused is wrapped (with ackgap.ErrAckNotConfirmed) in the
// Settlement.Err of a message acked under [ParallelSubscriber] whose offset
// commit the group coordinator refused or did not answer: a fenced or
// stale generation, an unknown member, a rebalance in progress, a
// coordinator that moved, a timeout. The message will be delivered again
// unless a later commit covers it; the inbox skips it.
var ErrCommitRefused = errors.New("kafkabroker: offset commit refused or unanswered")

// ErrOffsetRegressed is logged by [ParallelSubscriber] when a partition it
// claims has a committed offset below the highest one the coordinator
// accepted from it before: something moved the group's offset backwards (a
// zombie member's late commit, offsets expired after
// offsets.retention.minutes, an operator's reset). The records in between
// are delivered again, the inbox skips them, and the watermark is
// committed again as they are acked.
var ErrOffsetRegressed = errors.New("kafkabroker: the group's committed offset went backwards")

// commitRetryDefault is how long the committer waits before it commits a
// refused partition's watermark again when no CommitInterval paces it.
const commitRetryDefault = 200 * time.Millisecond

// Why a parallel delivery was settled without a confirmed commit.
var (
	errReleased = fmt.Errorf("%w: kafkabroker: the partition was released (rebalance or close) before a commit covering the offset was accepted", ackgap.ErrAckNotConfirmed)
)

// offsetCommitter sends one group session's offset commits itself: one
// OffsetCommit request to the group coordinator for every partition of the
// member whose watermark moved, with the session's generation and member
// id, and reads the answer per partition. A delivery acked below a
// watermark is settled confirmed only when a commit covering it was
// accepted; a refused or unanswered commit settles it unconfirmed
// (ErrCommitRefused), logs a warning with the partition and offset, and is
// retried with the partition's current watermark. Commits are sent one at
// a time and a partition's offset only grows, so the member never moves a
// committed offset backwards. Safe for concurrent use.
type offsetCommitter struct {
	client   sarama.Client
	conf     *sarama.Config
	group    string
	gen      int32
	member   string
	interval time.Duration // 0: commit as soon as a watermark moved
	retry    time.Duration
	logger   watermill.LoggerAdapter
	// accepted, when set, records each offset the coordinator accepted.
	accepted *acceptedOffsets

	sendMu sync.Mutex // one request at a time

	mu    sync.Mutex
	parts map[partitionKey]*commitState

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// commitState is one partition's side of the committer.
type commitState struct {
	want      int64 // the watermark to commit
	committed int64 // the last offset the coordinator accepted from this member; -1 none
	waiting   []ackedRecord
}

func newOffsetCommitter(client sarama.Client, conf *sarama.Config, group string, gen int32, member string, interval time.Duration, logger watermill.LoggerAdapter) *offsetCommitter {
	retry := commitRetryDefault
	if interval > 0 {
		retry = interval
	}
	return &offsetCommitter{
		client: client, conf: conf, group: group, gen: gen, member: member,
		interval: interval, retry: retry, logger: logger,
		parts: make(map[partitionKey]*commitState),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// advance tells the committer that partition k's watermark is wm and that
// acked (all below wm) wait for a commit covering them.
func (c *offsetCommitter) advance(k partitionKey, wm int64, acked []ackedRecord) {
	c.mu.Lock()
	st := c.parts[k]
	if st == nil {
		st = &commitState{want: -1, committed: -1}
		c.parts[k] = st
	}
	st.want = max(st.want, wm)
	st.waiting = append(st.waiting, acked...)
	c.mu.Unlock()
	if c.interval == 0 {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// run commits on every kick (no interval) or tick until stop.
func (c *offsetCommitter) run() {
	defer close(c.done)
	var tick <-chan time.Time
	if c.interval > 0 {
		t := time.NewTicker(c.interval)
		defer t.Stop()
		tick = t.C
	}
	retry := time.NewTimer(c.retry)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-c.kick:
		case <-tick:
		case <-retry.C:
		case <-c.stop:
			return
		}
		if !c.flush(nil) && c.interval == 0 {
			retry.Reset(c.retry)
		}
	}
}

// close stops the periodic commits and commits every partition's last
// watermark once more; deliveries still waiting are settled unconfirmed.
func (c *offsetCommitter) close() {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		c.flush(nil)
		c.mu.Lock()
		keys := slices.Collect(maps.Keys(c.parts))
		c.mu.Unlock()
		for _, k := range keys {
			c.forget(k)
		}
	})
}

// release commits partition k's watermark now and forgets k: the member is
// giving the partition up. Deliveries a refused commit left waiting are
// settled unconfirmed.
func (c *offsetCommitter) release(k partitionKey) {
	c.flush(&k)
	c.forget(k)
}

func (c *offsetCommitter) forget(k partitionKey) {
	c.mu.Lock()
	st := c.parts[k]
	delete(c.parts, k)
	c.mu.Unlock()
	if st == nil {
		return
	}
	for _, r := range st.waiting {
		r.d.Settle(ackgap.Settlement{Acked: true, At: r.ackedAt, Err: errReleased})
	}
}

// commitBlock is one partition in one request.
type commitBlock struct {
	k       partitionKey
	offset  int64
	covered []ackedRecord
}

// flush sends one OffsetCommit request for every partition (only for k
// when not nil) whose watermark is above what the coordinator accepted,
// and settles the deliveries it covered. It returns false when a
// partition was refused (a retry is due).
func (c *offsetCommitter) flush(only *partitionKey) bool {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()

	c.mu.Lock()
	var blocks []commitBlock
	for k, st := range c.parts {
		if only != nil && k != *only {
			continue
		}
		if st.want <= st.committed {
			continue // nothing new: never commit the same or a lower offset
		}
		n := 0
		for n < len(st.waiting) && st.waiting[n].offset < st.want {
			n++
		}
		blocks = append(blocks, commitBlock{k: k, offset: st.want, covered: slices.Clone(st.waiting[:n])})
		st.waiting = slices.Delete(st.waiting, 0, n)
	}
	c.mu.Unlock()
	if len(blocks) == 0 {
		return true
	}

	errs := c.send(blocks)
	at := time.Now()
	ok := true
	c.mu.Lock()
	for i, b := range blocks {
		st := c.parts[b.k]
		if errs[i] == nil && st != nil {
			st.committed = max(st.committed, b.offset)
		}
		if errs[i] != nil {
			ok = false
		}
	}
	c.mu.Unlock()
	for i, b := range blocks {
		if errs[i] == nil {
			if c.accepted != nil {
				c.accepted.record(b.k, b.offset)
			}
			for _, r := range b.covered {
				r.d.Settle(ackgap.Settlement{Acked: true, At: r.ackedAt, Confirmed: at})
			}
			continue
		}
		// Watermill's LoggerAdapter has no warn level; Error it is.
		c.logger.Error("Offset commit refused: the acked messages below it are unconfirmed and will be redelivered unless a later commit covers them; retrying with the current watermark",
			errs[i], watermill.LogFields{"topic": b.k.topic, "partition": b.k.partition, "offset": b.offset,
				"consumer_group": c.group, "generation": c.gen, "unconfirmed": len(b.covered)})
		err := fmt.Errorf("%w: %w: topic %s partition %d offset %d: %w", ackgap.ErrAckNotConfirmed, ErrCommitRefused, b.k.topic, b.k.partition, b.offset, errs[i])
		for _, r := range b.covered {
			r.d.Settle(ackgap.Settlement{Acked: true, At: r.ackedAt, Err: err})
		}
	}
	return ok
}

// send sends blocks in one request to the group coordinator and returns
// each block's error (nil: accepted).
func (c *offsetCommitter) send(blocks []commitBlock) []error {
	return sendOffsetCommit(c.client, c.conf, c.group, c.gen, c.member, blocks)
}

// sendOffsetCommit sends blocks in one OffsetCommit request to group's
// coordinator, with generation gen and member id member, and returns each
// block's error (nil: the coordinator accepted it).
func sendOffsetCommit(client sarama.Client, conf *sarama.Config, group string, gen int32, member string, blocks []commitBlock) []error {
	errs := make([]error, len(blocks))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	req := sarama.NewOffsetCommitRequest(conf, group)
	req.ConsumerGroupGeneration = gen
	req.ConsumerID = member
	for _, b := range blocks {
		req.AddBlock(b.k.topic, b.k.partition, b.offset, 0, "")
	}
	coord, err := client.Coordinator(group)
	if err != nil {
		return fail(fmt.Errorf("find the group coordinator: %w", err))
	}
	resp, err := coord.CommitOffset(req)
	if err != nil {
		// The connection failed or timed out: the commit may or may not
		// have landed. Unconfirmed either way; the next commit carries a
		// watermark at least as high.
		_ = client.RefreshCoordinator(group)
		return fail(fmt.Errorf("OffsetCommit: %w", err))
	}
	refresh := false
	for i, b := range blocks {
		kerr, found := resp.Errors[b.k.topic][b.k.partition]
		switch {
		case !found:
			errs[i] = errors.New("OffsetCommit: no answer for the partition")
		case kerr != sarama.ErrNoError:
			errs[i] = fmt.Errorf("OffsetCommit: %w", kerr)
			if errors.Is(kerr, sarama.ErrNotCoordinatorForConsumer) || errors.Is(kerr, sarama.ErrConsumerCoordinatorNotAvailable) {
				refresh = true
			}
		}
	}
	if refresh {
		_ = client.RefreshCoordinator(group)
	}
	return errs
}

// acceptedOffsets remembers, per partition, the highest offset the group
// coordinator accepted from one subscriber, across group sessions, so that
// a committed offset that went backwards (a zombie member's late commit,
// offsets expired or reset by an operator) is seen when the partition is
// claimed again. Safe for concurrent use.
type acceptedOffsets struct {
	mu sync.Mutex
	m  map[partitionKey]int64
}

func (a *acceptedOffsets) record(k partitionKey, offset int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = make(map[partitionKey]int64)
	}
	if offset > a.m[k] {
		a.m[k] = offset
	}
}

func (a *acceptedOffsets) get(k partitionKey) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	off, ok := a.m[k]
	return off, ok
}
