package kafkabroker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

// apiKeyOffsetCommit is the Kafka protocol's API key of OffsetCommit.
const apiKeyOffsetCommit = 8

// commitProxy is a TCP proxy of the test's own between Sarama and the
// broker that can stop forwarding offset commits for a while. It reads
// the Kafka protocol's frames (a 4-byte size, then the request, whose
// first two bytes are its API key): while it holds, an OffsetCommit
// request, and every later request on the same connection (Kafka answers
// a connection's requests in order), is kept instead of forwarded, so the
// client waits for an answer until its request times out. holdCommits
// keeps only the next few OffsetCommit requests. release forwards what it
// kept in the order it arrived, one request at a time, each after the
// broker answered the one before (also those whose client has hung up in
// between: commits that land late), then forwards everything again;
// releaseNewestFirst forwards the newest first, as a broker that applies
// an unanswered commit late, after a newer one, does.
//
// Sarama reaches the proxy through Net.Proxy.Dialer (set with
// ConfigureSarama): proxying only the bootstrap address would not do, as
// kfake advertises its own address (127.0.0.1:9092) in Metadata and
// FindCoordinator answers and Sarama connects to that for everything after
// the first request. The dialer sends every connection to the broker at
// addr through a listener of the proxy's that forwards to addr.
type commitProxy struct {
	t testing.TB
	// wg counts the proxy's goroutines; Close waits for them.
	wg sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	listeners map[string]net.Listener // by the broker address they forward to
	conns     []*proxyConn
	holding   bool
	holdTo    int // with holding, keep OffsetCommit requests while commits < holdTo; -1: all
	held      []heldRequest
	commits   int           // OffsetCommit requests held so far
	answered  chan struct{} // closed and replaced when the broker answers a request
}

// proxyConn is one client connection and its connection to the broker.
type proxyConn struct {
	client, broker net.Conn
	held           int // requests of this connection in commitProxy.held or being released
	sent, answers  int // requests forwarded, answers relayed back
}

type heldRequest struct {
	c     *proxyConn
	frame []byte
}

// newCommitProxy returns a proxy that forwards everything until hold; it
// is closed when t ends.
func newCommitProxy(t testing.TB) *commitProxy {
	p := &commitProxy{t: t, listeners: map[string]net.Listener{}, answered: make(chan struct{})}
	t.Cleanup(p.close)
	return p
}

// Dial connects to the broker at addr through the proxy: Sarama's
// Net.Proxy.Dialer.
func (p *commitProxy) Dial(network, addr string) (net.Conn, error) {
	p.mu.Lock()
	ln := p.listeners[addr]
	if ln == nil && !p.closed {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.listeners[addr] = ln
		p.wg.Go(func() { p.accept(ln, addr) })
	}
	p.mu.Unlock()
	if ln == nil {
		return nil, errors.New("commit proxy: closed")
	}
	return net.DialTimeout(network, ln.Addr().String(), 5*time.Second)
}

func (p *commitProxy) accept(ln net.Listener, addr string) {
	for {
		client, err := ln.Accept()
		if err != nil {
			return // closed
		}
		broker, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		c := &proxyConn{client: client, broker: broker}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = client.Close()
			_ = broker.Close()
			return
		}
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Go(func() { p.requests(c) })
		p.wg.Go(func() { p.answers(c) })
	}
}

// requests forwards c's requests, or keeps them while holding. The
// broker connection stays open after the client hung up, for the requests
// kept; close ends it.
func (p *commitProxy) requests(c *proxyConn) {
	for {
		frame, err := readFrame(c.client)
		if err != nil {
			return
		}
		p.mu.Lock()
		isCommit := len(frame) >= 6 && binary.BigEndian.Uint16(frame[4:6]) == apiKeyOffsetCommit
		if c.held > 0 || (p.holding && isCommit && (p.holdTo < 0 || p.commits < p.holdTo)) {
			c.held++
			p.held = append(p.held, heldRequest{c, frame})
			if isCommit {
				p.commits++
			}
			p.mu.Unlock()
			continue
		}
		c.sent++
		p.mu.Unlock()
		if _, err := c.broker.Write(frame); err != nil {
			return
		}
	}
}

// answers relays the broker's answers to c's client, which may have hung
// up: then nobody reads a late answer.
func (p *commitProxy) answers(c *proxyConn) {
	for {
		frame, err := readFrame(c.broker)
		if err != nil {
			return
		}
		_, _ = c.client.Write(frame)
		p.mu.Lock()
		c.answers++
		close(p.answered)
		p.answered = make(chan struct{})
		p.mu.Unlock()
	}
}

// readFrame reads one size-prefixed Kafka protocol frame, size included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// hold starts keeping OffsetCommit requests.
func (p *commitProxy) hold() {
	p.mu.Lock()
	p.holding, p.holdTo = true, -1
	p.mu.Unlock()
}

// holdCommits keeps the next n OffsetCommit requests (and what follows
// them on their connections); later ones are forwarded.
func (p *commitProxy) holdCommits(n int) {
	p.mu.Lock()
	p.holding, p.holdTo = true, p.commits+n
	p.mu.Unlock()
}

// heldCommits returns how many OffsetCommit requests the proxy has kept.
func (p *commitProxy) heldCommits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.commits
}

// release forwards the requests kept, oldest first, each once the broker
// answered the one before (requests that arrive meanwhile queue behind
// them), then stops holding. It calls answered after each answer.
func (p *commitProxy) release(answered func()) {
	p.t.Helper()
	p.releaseAll(false, answered)
}

// releaseNewestFirst is release with the requests kept so far forwarded
// newest first: the connection that was held last goes first (a
// connection's own requests keep their order, as Kafka answers them in
// order).
func (p *commitProxy) releaseNewestFirst(answered func()) {
	p.t.Helper()
	p.releaseAll(true, answered)
}

func (p *commitProxy) releaseAll(newestFirst bool, answered func()) {
	t := p.t
	t.Helper()
	if newestFirst {
		p.mu.Lock()
		var conns []*proxyConn
		byConn := map[*proxyConn][]heldRequest{}
		for _, h := range p.held {
			if byConn[h.c] == nil {
				conns = append(conns, h.c)
			}
			byConn[h.c] = append(byConn[h.c], h)
		}
		p.held = p.held[:0]
		for _, c := range slices.Backward(conns) {
			p.held = append(p.held, byConn[c]...)
		}
		p.mu.Unlock()
	}
	for {
		p.mu.Lock()
		if len(p.held) == 0 {
			p.holding = false
			p.mu.Unlock()
			return
		}
		h := p.held[0]
		p.held = p.held[1:]
		h.c.sent++
		want := h.c.sent
		p.mu.Unlock()
		_, err := h.c.broker.Write(h.frame)
		p.mu.Lock()
		h.c.held--
		p.mu.Unlock()
		require.NoError(t, err)
		deadline := time.After(10 * time.Second)
		for {
			p.mu.Lock()
			done, answered := h.c.answers >= want, p.answered
			p.mu.Unlock()
			if done {
				break
			}
			select {
			case <-answered:
			case <-deadline:
				t.Fatal("commit proxy: the broker did not answer a released request in 10s")
			}
		}
		answered()
	}
}

func (p *commitProxy) close() {
	p.mu.Lock()
	p.closed = true
	for _, ln := range p.listeners {
		_ = ln.Close()
	}
	for _, c := range p.conns {
		_ = c.client.Close()
		_ = c.broker.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// committedSampler reads a partition's committed offset from the broker
// (not through any proxy) every 20 ms until stop, and whenever sample is
// called.
type committedSampler struct {
	t             testing.TB
	admin         sarama.ClusterAdmin
	group, topic  string
	partition     int32
	mu            sync.Mutex
	samples       []int64
	done, stopped chan struct{}
	once          sync.Once
}

func sampleCommitted(t testing.TB, group, topic string, partition int32) *committedSampler {
	t.Helper()
	s := &committedSampler{t: t, admin: newAdmin(t), group: group, topic: topic, partition: partition,
		done: make(chan struct{}), stopped: make(chan struct{})}
	var errs []error
	go func() {
		defer close(s.stopped)
		for {
			if err := s.take(); err != nil {
				errs = append(errs, err)
			}
			select {
			case <-s.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		s.stop()
		require.Empty(t, errs, "offset fetches of the sampler")
	})
	return s
}

// take reads the committed offset once and keeps it.
func (s *committedSampler) take() error {
	resp, err := s.admin.ListConsumerGroupOffsets(s.group, map[string][]int32{s.topic: {s.partition}})
	if err != nil {
		return err
	}
	block := resp.GetBlock(s.topic, s.partition)
	if block == nil {
		return errors.New("no block for the partition")
	}
	s.mu.Lock()
	s.samples = append(s.samples, block.Offset)
	s.mu.Unlock()
	return nil
}

// sample takes a sample now, on the caller's goroutine.
func (s *committedSampler) sample() { require.NoError(s.t, s.take()) }

// stop ends the sampling; later calls do nothing.
func (s *committedSampler) stop() {
	s.once.Do(func() {
		close(s.done)
		<-s.stopped
		_ = s.admin.Close()
	})
}

// count returns how many samples were taken so far.
func (s *committedSampler) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.samples)
}

// taken returns the samples taken so far, in order.
func (s *committedSampler) taken() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.samples...)
}

// viaProxy routes every connection of a subscriber's Sarama clients
// through proxy (ParallelConfig.ConfigureSarama).
func viaProxy(proxy *commitProxy) func(*sarama.Config) {
	return func(sc *sarama.Config) {
		sc.Net.Proxy.Enable = true
		sc.Net.Proxy.Dialer = proxy
	}
}

// proxiedPartition is a ParallelSubscriber on partition 0 of a topic of
// its own, every connection through a commit proxy.
type proxiedPartition struct {
	t            testing.TB
	topic, group string
	proxy        *commitProxy
	sub          *kafkabroker.ParallelSubscriber
	out          <-chan *message.Message
	cancel       context.CancelFunc
	next         int
}

// newProxiedPartition subscribes with parallelConfig, CommitTimeout
// commitTimeout, tune (may be nil) and logger (nil: the tests' logger).
func newProxiedPartition(t testing.TB, commitTimeout time.Duration, logger watermill.LoggerAdapter, tune func(*kafkabroker.ParallelConfig)) *proxiedPartition {
	t.Helper()
	r := &proxiedPartition{t: t, topic: unique("orders"), group: unique("billing"), proxy: newCommitProxy(t)}
	cfg := parallelConfig(kafkaBrokers(t), r.group)
	cfg.CommitTimeout = commitTimeout
	cfg.ConfigureSarama = viaProxy(r.proxy)
	if tune != nil {
		tune(cfg)
	}
	if logger == nil {
		logger = testLogger()
	}
	sub, err := kafkabroker.NewParallelSubscriber(cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	r.sub = sub
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r.cancel = cancel
	r.out, err = sub.Subscribe(ctx, r.topic)
	require.NoError(t, err)
	return r
}

// publish writes n events of distinct keys to partition 0.
func (r *proxiedPartition) publish(n int) {
	r.t.Helper()
	msgs := make([]*message.Message, 0, n)
	for range n {
		msgs = append(msgs, seqEvent(r.t, fmt.Sprintf("evt-%03d", r.next), fmt.Sprintf("k-%d", r.next), 1))
		r.next++
	}
	produce(r.t, r.topic, 0, msgs)
}

// ack receives and acks k messages and returns their settlements.
func (r *proxiedPartition) ack(k int) []<-chan ackgap.Settlement {
	r.t.Helper()
	var settled []<-chan ackgap.Settlement
	for range k {
		msg, _, ch := receive(r.t, r.out)
		msg.Ack()
		settled = append(settled, ch)
	}
	return settled
}

// stats returns the subscriber's Stats of partition 0 (Partition -1 when
// it does not hold it).
func (r *proxiedPartition) stats() kafkabroker.PartitionStats {
	for _, st := range r.sub.Stats() {
		if st.Partition == 0 {
			return st
		}
	}
	return kafkabroker.PartitionStats{Partition: -1}
}

// committed reads the group's committed offset of partition 0 from kfake
// (not through the proxy).
func (r *proxiedPartition) committed() int64 {
	r.t.Helper()
	return committedOffset(r.t, r.group, r.topic, 0)
}

// stop ends the subscription and waits until it left the group.
func (r *proxiedPartition) stop() {
	r.cancel()
	for range r.out { // closed once the subscription stopped and left the group
	}
}

func requireConfirmed(t testing.TB, settled []<-chan ackgap.Settlement) {
	t.Helper()
	for i, ch := range settled {
		s := settlement(t, ch)
		require.True(t, s.Acked)
		require.NoError(t, s.Err, "delivery %d", i)
		require.False(t, s.Confirmed.IsZero(), "delivery %d confirmed", i)
	}
}

func requireUnconfirmed(t testing.TB, s ackgap.Settlement, what string) {
	t.Helper()
	require.True(t, s.Acked, what)
	require.True(t, s.Confirmed.IsZero(), "%s: never confirmed", what)
	require.ErrorIs(t, s.Err, ackgap.ErrAckNotConfirmed, what)
	require.ErrorIs(t, s.Err, kafkabroker.ErrCommitRefused, what)
}

// TestParallelCommitUnansweredIsUnconfirmed: a TCP proxy of the test's
// own between the ParallelSubscriber and kfake stops forwarding offset
// commits for longer than a commit may take (CommitTimeout, here 2 s):
// the coordinator does not answer, as when it is overloaded or the
// network loses the request. Every message acked meanwhile is settled
// unconfirmed (ErrAckNotConfirmed, ErrCommitRefused), never confirmed, and
// the group's committed offset, sampled throughout straight from kfake,
// stays where it was. When the proxy forwards again, the held commits land
// late, in the order they were sent, and the subscriber's retry commits
// the watermark: the committed offset never moves backwards, and the
// messages acked from then on are confirmed.
func TestParallelCommitUnansweredIsUnconfirmed(t *testing.T) {
	t.Parallel()
	const batch = 10
	r := newProxiedPartition(t, 2*time.Second, nil, nil)

	// Through the proxy, commits are answered and confirmed.
	r.publish(batch)
	requireConfirmed(t, r.ack(batch))
	require.Equal(t, int64(batch), r.committed())
	sampler := sampleCommitted(t, r.group, r.topic, 0)

	// Commits unanswered: what is acked now is never confirmed. The first
	// ack's commit is held before the others are acked, so the commits held
	// carry at least two offsets, and would move the committed offset
	// backwards if they landed out of order.
	r.proxy.hold()
	heldFrom := sampler.count()
	r.publish(batch)
	settled := r.ack(1)
	eventually(t, time.Minute, "the first ack's commit held", func() bool { return r.proxy.heldCommits() >= 1 })
	settled = append(settled, r.ack(batch-1)...)
	for i, ch := range settled {
		requireUnconfirmed(t, settlement(t, ch), fmt.Sprintf("delivery %d", i))
	}
	require.GreaterOrEqual(t, r.proxy.heldCommits(), 2)
	require.Equal(t, int64(batch), r.committed(), "no commit reached the coordinator")
	st := r.stats()
	require.Equal(t, int64(2*batch), st.Watermark)
	require.Equal(t, int64(batch), st.Committed, "Stats shows only what the coordinator accepted")
	heldTo := sampler.count()

	// Answered again: the held commits land late, the retry commits the
	// watermark, and what is acked from now on is confirmed.
	r.proxy.release(sampler.sample) // a sample as each late commit lands
	eventually(t, time.Minute, "the watermark committed after the release", func() bool {
		return r.stats().Committed == 2*batch && r.committed() == 2*batch
	})
	r.publish(batch)
	requireConfirmed(t, r.ack(batch))
	require.Equal(t, int64(3*batch), r.committed())
	require.Zero(t, r.stats().Regressions, "in order, the late commits lowered nothing")
	r.stop()
	sampler.stop()

	samples := sampler.taken()
	require.Greater(t, heldTo, heldFrom, "sampled while the commits were held")
	for i, off := range samples[heldFrom:heldTo] {
		require.Equal(t, int64(batch), off, "sample %d while held", heldFrom+i)
	}
	for i := 1; i < len(samples); i++ {
		require.GreaterOrEqual(t, samples[i], samples[i-1], "the committed offset went backwards at sample %d: %v", i, samples)
	}
	t.Logf("%d OffsetCommit requests held; %d samples of the committed offset, %d while held", r.proxy.heldCommits(), len(samples), heldTo-heldFrom)
}

// TestParallelLateCommitRegressionRepaired: the proxy holds two offset
// commits past CommitTimeout, the first carrying offset 11 (the first ack
// of the second batch), the second one later, and lets the subscriber's
// retry through, so the coordinator accepts the watermark (20). Then it
// releases the two held commits newest first: the late, stale one lowers
// the group's committed offset below the watermark (to 11), as a real
// broker may do with a commit it never answered. With no new message and
// no rebalance, the subscriber's offset checks after its unanswered
// commits notice it: ErrOffsetRegressed is logged at warn with the
// partition and offsets, in the generation the commits were refused in
// (no rebalance in between), counted in Stats, and the watermark is
// committed again within a bounded time. The committed offset, sampled
// throughout straight from kfake, never exceeds the watermark and ends at
// it; nothing is delivered again.
func TestParallelLateCommitRegressionRepaired(t *testing.T) {
	t.Parallel()
	const batch = 10
	logs := &errorLog{LoggerAdapter: testLogger()}
	r := newProxiedPartition(t, time.Second, logs, func(c *kafkabroker.ParallelConfig) {
		// Unanswered commits are watched for SessionTimeout: room for the
		// test's steps on a busy machine.
		c.SessionTimeout = 30 * time.Second
	})

	r.publish(batch)
	requireConfirmed(t, r.ack(batch))
	require.Equal(t, int64(batch), r.committed())
	sampler := sampleCommitted(t, r.group, r.topic, 0)

	r.proxy.holdCommits(2)
	r.publish(batch)
	settled := r.ack(1)
	eventually(t, time.Minute, "the first ack's commit held", func() bool { return r.proxy.heldCommits() >= 1 })
	settled = append(settled, r.ack(batch-1)...)
	requireUnconfirmed(t, settlement(t, settled[0]), "the first ack, covered by the first held commit only")
	for _, ch := range settled[1:] {
		settlement(t, ch) // unconfirmed, or confirmed by the retry when a slow ack missed the second held commit
	}
	eventually(t, time.Minute, "the retry after the two held commits accepted", func() bool {
		return r.stats().Committed == 2*batch && r.committed() == 2*batch
	})
	require.Equal(t, 2, r.proxy.heldCommits())
	require.Zero(t, r.stats().Regressions)
	var refused []loggedError // the committer's logs of the unanswered commits
	for _, e := range logs.all() {
		if e.warn && e.fields["unconfirmed"] != nil {
			refused = append(refused, e)
		}
	}
	require.NotEmpty(t, refused, "the unanswered commits were logged")

	// The stale commits land, newest first: the committed offset goes
	// back below the watermark until the subscriber commits it again.
	r.proxy.releaseNewestFirst(sampler.sample)
	released := time.Now()
	eventually(t, time.Minute, "the regression reported and repaired", func() bool {
		return r.stats().Regressions >= 1 && r.committed() == 2*batch
	})
	repairedIn := time.Since(released)
	require.Less(t, repairedIn, 30*time.Second, "repaired within the watch (SessionTimeout) after the late commit")

	found := logs.records(kafkabroker.ErrOffsetRegressed)
	require.NotEmpty(t, found)
	f := found[0].fields
	require.True(t, found[0].warn, "at warn")
	require.EqualValues(t, 0, f["partition"])
	require.Less(t, f["committed"], int64(2*batch), "the late commit lowered the committed offset")
	require.GreaterOrEqual(t, f["committed"], int64(batch))
	require.EqualValues(t, 2*batch, f["accepted_before"])
	require.EqualValues(t, 2*batch, f["watermark"])
	require.Equal(t, refused[0].fields["generation"], f["generation"], "found in the generation the commits were refused in: no rebalance")

	select {
	case msg := <-r.out:
		t.Fatalf("message %s delivered again: no rebalance, no redelivery", msg.UUID)
	case <-time.After(500 * time.Millisecond):
	}
	st := r.stats()
	require.Equal(t, int64(2*batch), st.Watermark)
	require.Equal(t, int64(2*batch), st.Committed)
	sampler.sample()
	r.stop()
	sampler.stop()
	samples := sampler.taken()
	for i, off := range samples {
		require.LessOrEqual(t, off, int64(2*batch), "sample %d above the watermark: %v", i, samples)
	}
	require.Equal(t, int64(2*batch), samples[len(samples)-1], "the committed offset ends at the watermark: %v", samples)
	lowest := slices.Min(samples[slices.Index(samples, 2*batch):])
	t.Logf("late commit lowered the offset to %v; repaired %s after the release; lowest sample after the watermark was first committed: %d; %d samples",
		f["committed"], repairedIn, lowest, len(samples))
}

// TestParallelCommitTimeoutBoundsCommit: an OffsetCommit the coordinator
// does not answer is given up after CommitTimeout, not Sarama's
// Net.ReadTimeout (30 s, left at its default here): the message it
// covered is settled unconfirmed within CommitTimeout plus a margin.
func TestParallelCommitTimeoutBoundsCommit(t *testing.T) {
	t.Parallel()
	const commitTimeout = time.Second
	var readTimeout time.Duration
	r := newProxiedPartition(t, commitTimeout, nil, func(c *kafkabroker.ParallelConfig) {
		readTimeout = c.SaramaConfig().Net.ReadTimeout
	})
	require.Equal(t, 30*time.Second, readTimeout, "Sarama's default")
	r.publish(1)
	msg, _, ch := receive(t, r.out)
	r.proxy.hold()
	acked := time.Now()
	msg.Ack()
	s := settlement(t, ch)
	took := time.Since(acked)
	requireUnconfirmed(t, s, "the held commit")
	require.GreaterOrEqual(t, r.proxy.heldCommits(), 1)
	require.Less(t, took, commitTimeout+10*time.Second, "bounded by CommitTimeout, not Net.ReadTimeout (%s)", readTimeout)
	t.Logf("unanswered commit settled unconfirmed %s after the ack (CommitTimeout %s, Net.ReadTimeout %s)", took, commitTimeout, readTimeout)
}
