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

// ErrOffsetRegressed is logged (at warn) by [ParallelSubscriber] when the
// group's committed offset of a partition is found below the highest one
// the coordinator accepted from the subscriber: something moved it
// backwards. Two checks find it:
//
//   - after an unanswered commit (CommitTimeout, a lost connection: the
//     commit may still land), an OffsetFetch at the next commit round and
//     then every second, for SessionTimeout after the last unanswered
//     commit, for the partitions the member still owns in its generation:
//     the late commit landed after a newer one. The watermark is committed
//     again at once.
//   - when a partition is claimed: a zombie member's late commit, offsets
//     expired after offsets.retention.minutes, an operator's reset. The
//     records in between are delivered again, the inbox skips them, and the
//     watermark is committed again as they are acked.
//
// Each finding counts in [PartitionStats].Regressions.
var ErrOffsetRegressed = errors.New("kafkabroker: the group's committed offset went backwards")

const (
	// commitRetryDefault is how long the committer waits before it commits
	// a refused partition's watermark again when no CommitInterval paces
	// it; also the delay of the first offset check after an unanswered
	// commit when no commit round comes sooner.
	commitRetryDefault = 200 * time.Millisecond
	// offsetCheckInterval is how often the committer fetches the
	// committed offsets of the partitions it watches after an unanswered
	// commit.
	offsetCheckInterval = time.Second
	// finishedCommitDelay is how long the committer (without a
	// CommitInterval) waits before it commits a partition whose watermark
	// did not move but whose finished offsets above it grew (see
	// finishedSet): a watermark held by a slow record then costs at most
	// ten commits a second, and a crash replays at most what finished in
	// the last one.
	finishedCommitDelay = 100 * time.Millisecond
)

// errOutcomeUnknown marks a commit that was sent and not answered (a
// timeout, a lost connection): the coordinator may still apply it, late.
var errOutcomeUnknown = errors.New("no answer: the commit may still land late")

// Why a delivery was settled without a confirmed commit.
var (
	errReleased = fmt.Errorf("%w: kafkabroker: the partition was released (rebalance or close) before a commit covering the offset was accepted", ackgap.ErrAckNotConfirmed)
	errGivenUp  = errors.New("kafkabroker: the subscriber stopped (CloseTimeout) before the message was acked or nacked")
)

// partitionKey names one partition of a topic.
type partitionKey struct {
	topic     string
	partition int32
}

// offsetKey names one record of a partition.
type offsetKey struct {
	partitionKey
	offset int64
}

// offsetCommitter sends one group session's offset commits itself: one
// OffsetCommit request to the group coordinator for every partition of the
// member whose watermark moved, with the session's generation and member
// id, and reads the answer per partition. A delivery acked below a
// watermark is settled confirmed only when a commit covering it was
// accepted; a refused or unanswered commit settles it unconfirmed
// (ErrCommitRefused), logs a warning with the partition and offset, and is
// retried with the partition's current watermark. Commits are sent one at
// a time and a partition's offset only grows, so the member never moves a
// committed offset backwards itself; but an unanswered commit may land
// after a newer one. So, with checkWindow set, a partition whose commit
// went unanswered is watched for checkWindow: its committed offset is
// fetched at the next commit round and every offsetCheckInterval, and one
// found below what the coordinator accepted from the member is reported
// (ErrOffsetRegressed) and committed again. Safe for concurrent use.
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
	// checkWindow is how long a partition is watched after an unanswered
	// commit; 0: never.
	checkWindow time.Duration
	// timeout, when set, bounds each request to the coordinator as the
	// caller sees it, the coordinator lookup included (see bounded).
	timeout time.Duration

	callMu sync.Mutex
	busy   chan struct{} // closed when the last request given up on returned

	sendMu sync.Mutex // one request at a time

	mu      sync.Mutex
	parts   map[partitionKey]*commitState
	checkAt time.Time // when the next offset check is due
	// metaLimit bounds the finished-offsets metadata of each partition's
	// commit (finishedMetadataMax); 0 once the coordinator refused one as
	// too large (offset.metadata.max.bytes set lower): commits then go
	// without it.
	metaLimit int

	kick     chan struct{}
	metaKick chan struct{} // a finished set grew; commit within finishedCommitDelay
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

// commitState is one partition's side of the committer.
type commitState struct {
	want      int64 // the watermark to commit
	committed int64 // the last offset the coordinator accepted from this member; -1 none
	waiting   []ackedRecord
	// watchUntil is when the offset checks of the partition end: an
	// unanswered commit's time plus checkWindow.
	watchUntil time.Time
	// fin, when set (track), is the partition's finished offsets above the
	// watermark, sent in each commit's metadata; finVersion is its version
	// the last accepted commit carried.
	fin        *finishedSet
	finVersion uint64
}

func newOffsetCommitter(client sarama.Client, conf *sarama.Config, group string, gen int32, member string, interval time.Duration, logger watermill.LoggerAdapter) *offsetCommitter {
	retry := commitRetryDefault
	if interval > 0 {
		retry = interval
	}
	return &offsetCommitter{
		client: client, conf: conf, group: group, gen: gen, member: member,
		interval: interval, retry: retry, logger: logger,
		parts:     make(map[partitionKey]*commitState),
		metaLimit: finishedMetadataMax,
		kick:      make(chan struct{}, 1),
		metaKick:  make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
}

// state returns k's state, created when missing; c.mu must be held.
func (c *offsetCommitter) state(k partitionKey) *commitState {
	st := c.parts[k]
	if st == nil {
		st = &commitState{want: -1, committed: -1}
		c.parts[k] = st
	}
	return st
}

// track makes fin the finished set of partition k whose commits carry in
// their metadata (a claim's, from its start).
func (c *offsetCommitter) track(k partitionKey, fin *finishedSet) {
	c.mu.Lock()
	c.state(k).fin = fin
	c.mu.Unlock()
}

// finished tells the committer that partition k's finished set grew while
// its watermark, wm, did not move: without a CommitInterval it is
// committed within finishedCommitDelay; with one, at the next tick.
func (c *offsetCommitter) finished(k partitionKey, wm int64) {
	c.mu.Lock()
	st := c.state(k)
	st.want = max(st.want, wm)
	c.mu.Unlock()
	if c.interval == 0 {
		select {
		case c.metaKick <- struct{}{}:
		default:
		}
	}
}

// advance tells the committer that partition k's watermark is wm and that
// acked (all below wm) wait for a commit covering them.
func (c *offsetCommitter) advance(k partitionKey, wm int64, acked []ackedRecord) {
	c.mu.Lock()
	st := c.state(k)
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
	check := time.NewTimer(offsetCheckInterval)
	check.Stop()
	defer check.Stop()
	meta := time.NewTimer(finishedCommitDelay)
	meta.Stop()
	defer meta.Stop()
	metaArmed := false
	for {
		select {
		case <-c.kick:
		case <-tick:
		case <-retry.C:
		case <-check.C:
		case <-meta.C:
			metaArmed = false
		case <-c.metaKick:
			if !metaArmed {
				metaArmed = true
				meta.Reset(finishedCommitDelay)
			}
			continue
		case <-c.stop:
			return
		}
		if !c.round() && c.interval == 0 {
			retry.Reset(c.retry)
		}
		if d, ok := c.nextCheck(); ok {
			check.Reset(d)
		} else {
			check.Stop()
		}
	}
}

// round is one commit round: the offset check when one is due, then the
// commit (see flush).
func (c *offsetCommitter) round() bool {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.checkOffsets()
	return c.flushLocked(nil)
}

// nextCheck returns how long the check timer waits for the next offset
// check (at least the retry delay, or offsetCheckInterval when that is
// shorter), and whether any partition is watched.
func (c *offsetCommitter) nextCheck() (time.Duration, bool) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.parts {
		if now.Before(st.watchUntil) {
			return max(c.checkAt.Sub(now), min(c.retry, offsetCheckInterval)), true
		}
	}
	return 0, false
}

// checkOffsets, when a check is due, fetches the committed offsets of the
// partitions watched after an unanswered commit (from the coordinator,
// straight, not through Sarama's offset manager) and reports each one
// found below the offset the coordinator accepted from this member
// (ErrOffsetRegressed): its accepted offset becomes the one fetched, so
// the flush that follows commits its watermark again. Called with sendMu
// held, so no commit of the member is on the wire meanwhile but the
// unanswered ones.
func (c *offsetCommitter) checkOffsets() {
	now := time.Now()
	c.mu.Lock()
	if c.checkWindow <= 0 || now.Before(c.checkAt) {
		c.mu.Unlock()
		return
	}
	var keys []partitionKey
	for k, st := range c.parts {
		if now.Before(st.watchUntil) {
			keys = append(keys, k)
		}
	}
	c.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	var fetched map[partitionKey]int64
	var got map[partitionKey]int64
	ran, err := c.bounded("OffsetFetch", func() error {
		var ferr error
		fetched, ferr = fetchCommitted(c.client, c.conf, c.group, keys)
		return ferr
	})
	if ran {
		got = fetched
	}
	c.mu.Lock()
	c.checkAt = time.Now().Add(offsetCheckInterval)
	c.mu.Unlock()
	if err != nil {
		c.logger.Info("Cannot check the committed offsets after an unanswered offset commit; checking again",
			watermill.LogFields{"err": err.Error(), "consumer_group": c.group, "generation": c.gen, "partitions": len(keys)})
	}
	for _, k := range keys {
		off, ok := got[k]
		if !ok {
			continue
		}
		c.mu.Lock()
		st := c.parts[k]
		regressed := st != nil && st.committed >= 0 && off < st.committed
		var accepted, wm int64
		if regressed {
			accepted, wm = st.committed, st.want
			st.committed = off
		}
		c.mu.Unlock()
		if !regressed {
			continue
		}
		if c.accepted != nil {
			c.accepted.regressed(k)
		}
		warn(c.logger, "The group's committed offset went backwards after an unanswered offset commit landed late; committing the watermark again",
			ErrOffsetRegressed, watermill.LogFields{"topic": k.topic, "partition": k.partition, "committed": off,
				"accepted_before": accepted, "watermark": wm, "consumer_group": c.group, "generation": c.gen})
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
		if r.d != nil { // nil: skipped, finished by an earlier owner
			r.d.Settle(ackgap.Settlement{Acked: true, At: r.ackedAt, Err: errReleased})
		}
	}
}

// commitBlock is one partition in one request.
type commitBlock struct {
	k       partitionKey
	offset  int64
	covered []ackedRecord
	// metadata is the partition's finished offsets above offset
	// (encodeFinished), "" for none; version the finished set's version
	// it encodes.
	metadata string
	version  uint64
}

// flush sends one OffsetCommit request for every partition (only for k
// when not nil) whose watermark is above what the coordinator accepted,
// and settles the deliveries it covered. It returns false when a
// partition was refused (a retry is due). A partition whose commit went
// unanswered is watched from then on (see checkOffsets).
func (c *offsetCommitter) flush(only *partitionKey) bool {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.flushLocked(only)
}

// flushLocked is flush with sendMu held.
func (c *offsetCommitter) flushLocked(only *partitionKey) bool {
	c.mu.Lock()
	var blocks []commitBlock
	for k, st := range c.parts {
		if only != nil && k != *only {
			continue
		}
		if st.want < 0 || st.want < st.committed {
			continue // never commit a lower offset
		}
		var meta string
		var version uint64
		if st.fin != nil && c.metaLimit > 0 {
			meta, version = st.fin.encode(st.want, c.metaLimit)
		}
		if st.want == st.committed && (st.fin == nil || version == st.finVersion || meta == "") {
			continue // nothing new: the same offset again only with more finished above it
		}
		n := 0
		for n < len(st.waiting) && st.waiting[n].offset < st.want {
			n++
		}
		blocks = append(blocks, commitBlock{k: k, offset: st.want, covered: slices.Clone(st.waiting[:n]), metadata: meta, version: version})
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
	tooLarge := false
	for i, b := range blocks {
		st := c.parts[b.k]
		if errs[i] == nil && st != nil {
			st.committed = max(st.committed, b.offset)
			st.finVersion = max(st.finVersion, b.version)
		}
		if errs[i] != nil {
			ok = false
		}
		if errors.Is(errs[i], sarama.ErrOffsetMetadataTooLarge) && c.metaLimit > 0 {
			// The broker's offset.metadata.max.bytes is below ours: the
			// retry, and every later commit, goes without the set.
			c.metaLimit, tooLarge = 0, true
		}
		if st != nil && c.checkWindow > 0 && errors.Is(errs[i], errOutcomeUnknown) {
			// It may land late, after a newer commit: check at the next
			// round (the retry, or the check timer's), then every
			// offsetCheckInterval, for checkWindow.
			st.watchUntil = at.Add(c.checkWindow)
			c.checkAt = at
		}
	}
	c.mu.Unlock()
	if tooLarge {
		warn(c.logger, "Offset commit metadata refused as too large (the broker's offset.metadata.max.bytes is below 4096); committing without the finished offsets from now on: a restart replays them and the inbox skips them",
			sarama.ErrOffsetMetadataTooLarge, watermill.LogFields{"consumer_group": c.group, "generation": c.gen})
	}
	for i, b := range blocks {
		if errs[i] == nil {
			if c.accepted != nil {
				c.accepted.record(b.k, b.offset)
			}
			for _, r := range b.covered {
				if r.d != nil {
					r.d.Settle(ackgap.Settlement{Acked: true, At: r.ackedAt, Confirmed: at})
				}
			}
			continue
		}
		// A warning: nothing is lost (the inbox skips what a redelivery
		// brings), and the next commit retries with the current watermark.
		warn(c.logger, "Offset commit refused: the acked messages below it are unconfirmed and will be redelivered unless a later commit covers them; retrying with the current watermark",
			errs[i], watermill.LogFields{"topic": b.k.topic, "partition": b.k.partition, "offset": b.offset,
				"consumer_group": c.group, "generation": c.gen, "unconfirmed": len(b.covered)})
		err := fmt.Errorf("%w: %w: topic %s partition %d offset %d: %w", ackgap.ErrAckNotConfirmed, ErrCommitRefused, b.k.topic, b.k.partition, b.offset, errs[i])
		for _, r := range b.covered {
			if r.d != nil {
				r.d.Settle(ackgap.Settlement{Acked: true, At: r.ackedAt, Err: err})
			}
		}
	}
	return ok
}

// send sends blocks in one request to the group coordinator and returns
// each block's error (nil: accepted). With timeout set it returns within
// it (see bounded): a request given up on is unanswered (errOutcomeUnknown),
// it may still land.
func (c *offsetCommitter) send(blocks []commitBlock) []error {
	var sent []error
	ran, err := c.bounded("OffsetCommit", func() error {
		sent = sendOffsetCommit(c.client, c.conf, c.group, c.gen, c.member, blocks)
		return nil
	})
	if ran {
		return sent
	}
	errs := make([]error, len(blocks))
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// errCommitBusy: a request sent earlier is still waiting for Sarama (the
// coordinator lookup or its answer), so no other is sent meanwhile.
var errCommitBusy = errors.New("an earlier request to the coordinator is still unanswered; not sent")

// bounded runs call, a request to the group coordinator through Sarama,
// and waits at most c.timeout for it (without limit when c.timeout is 0).
// Sarama's own timeouts do not bound a call: the coordinator lookup
// (FindCoordinator, retried Metadata.Retry.Max times, each up to
// Net.ReadTimeout, after a dial of up to Net.DialTimeout) comes before
// the request when the coordinator is not known, and again after a
// request that found it moved or unanswering. (The request's own
// Net.ReadTimeout is below c.timeout, see ParallelConfig.commitSarama, so
// an unanswered request to a known coordinator ends as Sarama's timeout
// when the lookup after it is quick.) A call given up on goes on in the
// background until Sarama returns (closing the client ends it) and its
// result is dropped; bounded returns an error wrapping errOutcomeUnknown
// for op (the request may still land). Until it returned, later calls
// are not sent: they fail at once with errCommitBusy, so calls neither
// pile up nor overtake one another. ran reports whether call returned
// (err is then call's): only then may the caller read what call wrote.
func (c *offsetCommitter) bounded(op string, call func() error) (ran bool, err error) {
	if c.timeout <= 0 {
		return true, call()
	}
	c.callMu.Lock()
	defer c.callMu.Unlock()
	if c.busy != nil {
		select {
		case <-c.busy:
			c.busy = nil
		default:
			return false, fmt.Errorf("%s: %w", op, errCommitBusy)
		}
	}
	done := make(chan struct{})
	var callErr error
	go func() {
		defer close(done)
		callErr = call()
	}()
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case <-done:
		return true, callErr
	case <-t.C:
		c.busy = done
		return false, fmt.Errorf("%s: %w: no answer within CommitTimeout (%s), coordinator lookup included", op, errOutcomeUnknown, c.timeout)
	}
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
		req.AddBlock(b.k.topic, b.k.partition, b.offset, 0, b.metadata)
	}
	coord, err := client.Coordinator(group)
	if err != nil {
		return fail(fmt.Errorf("find the group coordinator: %w", err))
	}
	resp, err := coord.CommitOffset(req)
	if err != nil {
		// The connection failed or timed out: the commit may or may not
		// have landed, and may still land. Unconfirmed either way; the
		// next commit carries a watermark at least as high.
		_ = client.RefreshCoordinator(group)
		return fail(fmt.Errorf("OffsetCommit: %w: %w", errOutcomeUnknown, err))
	}
	refresh := false
	for i, b := range blocks {
		kerr, found := resp.Errors[b.k.topic][b.k.partition]
		switch {
		case !found:
			errs[i] = errors.New("OffsetCommit: no answer for the partition")
		case errors.Is(kerr, sarama.ErrRequestTimedOut):
			// The coordinator's append to the offsets topic timed out
			// (offsets.commit.timeout.ms): it may still land, like an
			// unanswered request.
			errs[i] = fmt.Errorf("OffsetCommit: %w: %w", errOutcomeUnknown, kerr)
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

// fetchCommitted reads group's committed offsets of keys from the group
// coordinator with one OffsetFetch request (the classic group protocol asks
// no generation or member id for it): -1 for a partition without one. A
// partition the coordinator answered with an error is left out, and the
// error returned with the others.
func fetchCommitted(client sarama.Client, conf *sarama.Config, group string, keys []partitionKey) (map[partitionKey]int64, error) {
	got, err := fetchCommittedMeta(client, conf, group, keys)
	if got == nil {
		return nil, err
	}
	out := make(map[partitionKey]int64, len(got))
	for k, c := range got {
		out[k] = c.offset
	}
	return out, err
}

// committedAt is a partition's committed offset and the metadata
// committed with it.
type committedAt struct {
	offset   int64
	metadata string
}

// fetchCommittedMeta is fetchCommitted with each partition's committed
// metadata.
func fetchCommittedMeta(client sarama.Client, conf *sarama.Config, group string, keys []partitionKey) (map[partitionKey]committedAt, error) {
	parts := make(map[string][]int32)
	for _, k := range keys {
		parts[k.topic] = append(parts[k.topic], k.partition)
	}
	req := sarama.NewOffsetFetchRequest(conf.Version, group, parts)
	coord, err := client.Coordinator(group)
	if err != nil {
		return nil, fmt.Errorf("find the group coordinator: %w", err)
	}
	resp, err := coord.FetchOffset(req)
	if err != nil {
		_ = client.RefreshCoordinator(group)
		return nil, fmt.Errorf("OffsetFetch: %w", err)
	}
	kerr := resp.Err
	if resp.Version >= 8 && len(resp.Groups) > 0 {
		kerr = resp.Groups[0].Err
	}
	if kerr != sarama.ErrNoError {
		if errors.Is(kerr, sarama.ErrNotCoordinatorForConsumer) || errors.Is(kerr, sarama.ErrConsumerCoordinatorNotAvailable) {
			_ = client.RefreshCoordinator(group)
		}
		return nil, fmt.Errorf("OffsetFetch: %w", kerr)
	}
	out := make(map[partitionKey]committedAt, len(keys))
	var errs []error
	for _, k := range keys {
		b := resp.GetBlock(k.topic, k.partition)
		switch {
		case b == nil:
			errs = append(errs, fmt.Errorf("OffsetFetch: no answer for topic %s partition %d", k.topic, k.partition))
		case b.Err != sarama.ErrNoError:
			errs = append(errs, fmt.Errorf("OffsetFetch: topic %s partition %d: %w", k.topic, k.partition, b.Err))
		default:
			out[k] = committedAt{offset: b.Offset, metadata: b.Metadata}
		}
	}
	return out, errors.Join(errs...)
}

// acceptedOffsets remembers, per partition, the highest offset the group
// coordinator accepted from one subscriber, across group sessions, so that
// a committed offset that went backwards (a zombie member's late commit,
// offsets expired or reset by an operator) is seen when the partition is
// claimed again; how often one was found to have gone backwards; and how
// many records were skipped as finished by an earlier owner (the commit
// metadata, see finishedSet). Safe for concurrent use.
type acceptedOffsets struct {
	mu          sync.Mutex
	m           map[partitionKey]int64
	regressions map[partitionKey]int64
	skips       map[partitionKey]int64
}

// skipped counts one record of k skipped as finished by its last owner.
func (a *acceptedOffsets) skipped(k partitionKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.skips == nil {
		a.skips = make(map[partitionKey]int64)
	}
	a.skips[k]++
}

// skipsOf returns how many records of k were skipped as finished.
func (a *acceptedOffsets) skipsOf(k partitionKey) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.skips[k]
}

// regressed counts one ErrOffsetRegressed finding for k.
func (a *acceptedOffsets) regressed(k partitionKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.regressions == nil {
		a.regressions = make(map[partitionKey]int64)
	}
	a.regressions[k]++
}

// regressionsOf returns how many ErrOffsetRegressed findings k had.
func (a *acceptedOffsets) regressionsOf(k partitionKey) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.regressions[k]
}

func (a *acceptedOffsets) record(k partitionKey, offset int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = make(map[partitionKey]int64)
	}
	// A commit of offset 0 counts too: a held first record commits 0
	// with the offsets finished above it.
	if cur, ok := a.m[k]; !ok || offset > cur {
		a.m[k] = offset
	}
}

func (a *acceptedOffsets) get(k partitionKey) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	off, ok := a.m[k]
	return off, ok
}

// warnLogger is a Watermill LoggerAdapter with a warn level, as
// router.SlogLogger returns.
type warnLogger interface {
	Warn(msg string, fields watermill.LogFields)
}

// warn logs at warn level: with Warn when l has it, else with Info and the
// field severity="warn" (package router does the same).
func warn(l watermill.LoggerAdapter, msg string, err error, fields watermill.LogFields) {
	if err != nil {
		fields = fields.Add(watermill.LogFields{"err": err.Error()})
	}
	if w, ok := l.(warnLogger); ok {
		w.Warn(msg, fields)
		return
	}
	l.Info(msg, fields.Add(watermill.LogFields{"severity": "warn"}))
}
