package kafkabroker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
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
// client waits for an answer until its request times out. release
// forwards what it kept in the order it arrived, one request at a time,
// each after the broker answered the one before (also those whose client
// has hung up in between: commits that land late), then forwards
// everything again.
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
		if c.held > 0 || (p.holding && len(frame) >= 6 && binary.BigEndian.Uint16(frame[4:6]) == apiKeyOffsetCommit) {
			c.held++
			p.held = append(p.held, heldRequest{c, frame})
			if binary.BigEndian.Uint16(frame[4:6]) == apiKeyOffsetCommit {
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
	p.holding = true
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
	t := p.t
	t.Helper()
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

// TestParallelCommitUnansweredIsUnconfirmed: a TCP proxy of the test's
// own between the ParallelSubscriber and kfake stops forwarding offset
// commits for longer than a commit may take (Sarama's Net.ReadTimeout,
// here 2 s): the coordinator does not answer, as when it is overloaded or
// the network loses the request. Every message acked meanwhile is settled
// unconfirmed (ErrAckNotConfirmed, ErrCommitRefused), never confirmed, and
// the group's committed offset, sampled throughout straight from kfake,
// stays where it was. When the proxy forwards again, the held commits land
// late, in the order they were sent, and the subscriber's retry commits
// the watermark: the committed offset never moves backwards, and the
// messages acked from then on are confirmed.
func TestParallelCommitUnansweredIsUnconfirmed(t *testing.T) {
	t.Parallel()
	const batch = 10
	const commitTimeout = 2 * time.Second
	topic, group := unique("orders"), unique("billing")
	proxy := newCommitProxy(t)
	sub := newParallel(t, group, func(c *kafkabroker.ParallelConfig) {
		c.ConfigureSarama = func(sc *sarama.Config) {
			sc.Net.Proxy.Enable = true
			sc.Net.Proxy.Dialer = proxy
			sc.Net.ReadTimeout = commitTimeout
		}
	})
	next := 0
	publish := func() {
		msgs := make([]*message.Message, 0, batch)
		for range batch {
			msgs = append(msgs, seqEvent(t, fmt.Sprintf("evt-%03d", next), fmt.Sprintf("k-%d", next), 1))
			next++
		}
		produce(t, topic, 0, msgs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := sub.Subscribe(ctx, topic)
	require.NoError(t, err)
	// ack receives and acks k messages and returns their settlements.
	ack := func(k int) []<-chan ackgap.Settlement {
		var settled []<-chan ackgap.Settlement
		for range k {
			msg, _, ch := receive(t, out)
			msg.Ack()
			settled = append(settled, ch)
		}
		return settled
	}
	requireConfirmed := func(settled []<-chan ackgap.Settlement) {
		t.Helper()
		for i, ch := range settled {
			s := settlement(t, ch)
			require.True(t, s.Acked)
			require.NoError(t, s.Err, "delivery %d", i)
			require.False(t, s.Confirmed.IsZero(), "delivery %d confirmed", i)
		}
	}
	partitionStats := func() kafkabroker.PartitionStats {
		for _, st := range sub.Stats() {
			if st.Partition == 0 {
				return st
			}
		}
		return kafkabroker.PartitionStats{Partition: -1}
	}

	// Through the proxy, commits are answered and confirmed.
	publish()
	requireConfirmed(ack(batch))
	require.Equal(t, int64(batch), committedOffset(t, group, topic, 0))
	sampler := sampleCommitted(t, group, topic, 0)

	// Commits unanswered: what is acked now is never confirmed. The first
	// ack's commit is held before the others are acked, so the commits held
	// carry at least two offsets, and would move the committed offset
	// backwards if they landed out of order.
	proxy.hold()
	heldFrom := sampler.count()
	publish()
	settled := ack(1)
	eventually(t, time.Minute, "the first ack's commit held", func() bool { return proxy.heldCommits() >= 1 })
	settled = append(settled, ack(batch-1)...)
	for i, ch := range settled {
		s := settlement(t, ch)
		require.True(t, s.Acked)
		require.True(t, s.Confirmed.IsZero(), "delivery %d: never confirmed", i)
		require.ErrorIs(t, s.Err, ackgap.ErrAckNotConfirmed, "delivery %d", i)
		require.ErrorIs(t, s.Err, kafkabroker.ErrCommitRefused, "delivery %d", i)
	}
	require.GreaterOrEqual(t, proxy.heldCommits(), 2)
	require.Equal(t, int64(batch), committedOffset(t, group, topic, 0), "no commit reached the coordinator")
	st := partitionStats()
	require.Equal(t, int64(2*batch), st.Watermark)
	require.Equal(t, int64(batch), st.Committed, "Stats shows only what the coordinator accepted")
	heldTo := sampler.count()

	// Answered again: the held commits land late, the retry commits the
	// watermark, and what is acked from now on is confirmed.
	proxy.release(sampler.sample) // a sample as each late commit lands
	eventually(t, time.Minute, "the watermark committed after the release", func() bool {
		return partitionStats().Committed == 2*batch && committedOffset(t, group, topic, 0) == 2*batch
	})
	publish()
	requireConfirmed(ack(batch))
	require.Equal(t, int64(3*batch), committedOffset(t, group, topic, 0))
	cancel()
	for range out { // closed once the subscription stopped and left the group
	}
	sampler.stop()

	samples := sampler.taken()
	require.Greater(t, heldTo, heldFrom, "sampled while the commits were held")
	for i, off := range samples[heldFrom:heldTo] {
		require.Equal(t, int64(batch), off, "sample %d while held", heldFrom+i)
	}
	for i := 1; i < len(samples); i++ {
		require.GreaterOrEqual(t, samples[i], samples[i-1], "the committed offset went backwards at sample %d: %v", i, samples)
	}
	t.Logf("%d OffsetCommit requests held; %d samples of the committed offset, %d while held", proxy.heldCommits(), len(samples), heldTo-heldFrom)
}
