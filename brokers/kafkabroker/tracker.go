package kafkabroker

import (
	"sync"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// The tracker links a message handed to the router with watermill-kafka's
// handling of its record: after an ack watermill-kafka marks the offset and
// (auto-commit off) commits it, on the claim's goroutine. The tracker sees
// both through a wrapped ConsumerGroupSession, installed with
// watermill-kafka's SaramaTracer hook, so Close can wait for the commit
// instead of racing it.

type partitionKey struct {
	topic     string
	partition int32
}

type offsetKey struct {
	partitionKey
	offset int64
}

// delivery is one message handed to the router.
type delivery struct {
	key offsetKey
	// committed is closed once the offset was marked and, with per-ack
	// commits, the commit request returned.
	committed chan struct{}
	// claimDone is closed when the partition's claim ended: an ack after
	// that commits nothing.
	claimDone <-chan struct{}
}

type tracker struct {
	autoCommit bool

	mu         sync.Mutex
	deliveries map[offsetKey]*delivery
	claims     map[partitionKey]chan struct{}
}

func newTracker(autoCommit bool) *tracker {
	return &tracker{
		autoCommit: autoCommit,
		deliveries: make(map[offsetKey]*delivery),
		claims:     make(map[partitionKey]chan struct{}),
	}
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// add registers msg, received from watermill-kafka on topic.
func (t *tracker) add(topic string, msg *message.Message) *delivery {
	partition, ok1 := kafka.MessagePartitionFromCtx(msg.Context())
	offset, ok2 := kafka.MessagePartitionOffsetFromCtx(msg.Context())
	d := &delivery{committed: make(chan struct{})}
	if !ok1 || !ok2 {
		// Not from a consumer-group claim: nothing to wait for.
		d.claimDone = closedCh
		return d
	}
	d.key = offsetKey{partitionKey{topic, partition}, offset}
	t.mu.Lock()
	defer t.mu.Unlock()
	if done, ok := t.claims[d.key.partitionKey]; ok {
		d.claimDone = done
	} else {
		d.claimDone = closedCh
	}
	// A nacked message comes back as a copy with the same offset; the
	// newest delivery wins.
	t.deliveries[d.key] = d
	return d
}

func (t *tracker) forget(d *delivery) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deliveries[d.key] == d {
		delete(t.deliveries, d.key)
	}
}

func (t *tracker) take(k offsetKey) *delivery {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.deliveries[k]
	delete(t.deliveries, k)
	return d
}

func (t *tracker) claimStarted(k partitionKey) chan struct{} {
	done := make(chan struct{})
	t.mu.Lock()
	t.claims[k] = done
	t.mu.Unlock()
	return done
}

func (t *tracker) claimEnded(k partitionKey, done chan struct{}) {
	t.mu.Lock()
	if t.claims[k] == done {
		delete(t.claims, k)
	}
	t.mu.Unlock()
	close(done)
}

// tracer is the kafka.SaramaTracer that installs the tracker; it leaves
// everything else as it is.
type tracer struct{ t *tracker }

var _ kafka.SaramaTracer = tracer{}

func (tracer) WrapConsumer(c sarama.Consumer) sarama.Consumer { return c }

func (tracer) WrapPartitionConsumer(pc sarama.PartitionConsumer) sarama.PartitionConsumer {
	return pc
}

func (tr tracer) WrapConsumerGroupHandler(h sarama.ConsumerGroupHandler) sarama.ConsumerGroupHandler {
	return groupHandler{inner: h, t: tr.t}
}

func (tracer) WrapSyncProducer(_ *sarama.Config, p sarama.SyncProducer) sarama.SyncProducer {
	return p
}

type groupHandler struct {
	inner sarama.ConsumerGroupHandler
	t     *tracker
}

var _ sarama.ConsumerGroupHandler = groupHandler{}

func (h groupHandler) Setup(s sarama.ConsumerGroupSession) error   { return h.inner.Setup(s) }
func (h groupHandler) Cleanup(s sarama.ConsumerGroupSession) error { return h.inner.Cleanup(s) }

func (h groupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	k := partitionKey{claim.Topic(), claim.Partition()}
	done := h.t.claimStarted(k)
	defer h.t.claimEnded(k, done)
	return h.inner.ConsumeClaim(&session{ConsumerGroupSession: s, t: h.t}, claim)
}

// session is one claim's view of the group session; watermill-kafka calls
// MarkMessage and Commit on the claim's goroutine only.
type session struct {
	sarama.ConsumerGroupSession
	t       *tracker
	pending []*delivery
}

var _ sarama.ConsumerGroupSession = (*session)(nil)

func (s *session) MarkMessage(m *sarama.ConsumerMessage, metadata string) {
	s.ConsumerGroupSession.MarkMessage(m, metadata)
	d := s.t.take(offsetKey{partitionKey{m.Topic, m.Partition}, m.Offset})
	if d == nil {
		return
	}
	if s.t.autoCommit {
		// Sarama commits it within CommitInterval, or when the session ends.
		close(d.committed)
		return
	}
	s.pending = append(s.pending, d)
}

// Commit sends the marked offsets and waits for the broker's answer. Sarama
// reports a failed commit on the group's error channel (watermill-kafka
// logs it), not here: such a message is redelivered and the inbox skips it.
func (s *session) Commit() {
	s.ConsumerGroupSession.Commit()
	for _, d := range s.pending {
		close(d.committed)
	}
	s.pending = s.pending[:0]
}
