package kafkabroker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

var errInjectedDeadLetter = errors.New("injected: dead-letter publish failed")

// heldDeadLetter is a dead-letter publisher whose first publish of event
// holdID waits until release is closed and then fails; every other publish
// goes to pub.
type heldDeadLetter struct {
	pub              message.Publisher
	holdID           string
	held, release    chan struct{}
	once             sync.Once
	mu               sync.Mutex
	published        map[string]int
	publishedReasons map[string]string
}

func (d *heldDeadLetter) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		first := false
		if id == d.holdID {
			d.once.Do(func() { first = true })
		}
		if first {
			close(d.held)
			<-d.release
			return errInjectedDeadLetter
		}
		if err := d.pub.Publish(topic, msg); err != nil {
			return err
		}
		d.mu.Lock()
		d.published[id]++
		d.publishedReasons[id] = msg.Metadata.Get(ackgap.MetadataDeadLetterReason)
		d.mu.Unlock()
	}
	return nil
}

func (d *heldDeadLetter) Close() error { return nil }

// committedOffsets returns group's committed offsets on topic by
// partition (-1: none committed).
func committedOffsets(t testing.TB, group, topic string) map[int32]int64 {
	t.Helper()
	admin := newAdmin(t)
	defer admin.Close()
	resp, err := admin.ListConsumerGroupOffsets(group, nil)
	require.NoError(t, err)
	out := map[int32]int64{}
	for p, block := range resp.Blocks[topic] {
		require.Equal(t, sarama.ErrNoError, block.Err, "offset fetch of partition %d", p)
		out[p] = block.Offset
	}
	return out
}

// TestS18PoisonOffsetMovesAfterDeadLetter is case S18 on Kafka (poison
// message blocks the partition, from ThreeDotsLabs/watermill #224, #184,
// #271, #414 and opensearch-project/data-prepper #3247): "partition p0 =
// m1 (valid E1), m2 (not JSON / no id), m3 (valid E3), m4 (valid E4,
// handler always returns a permanent business error). Expected: m2 fails
// at decode and goes to the DLQ at once with original bytes and reason; m4
// retried at most N=3 times with capped backoff, then DLQ; the offset
// moves past m2/m4 only after the DLQ publish is confirmed; E1 and E3
// applied; lag back to 0 within a bound; poison_routed=2; attempts per
// message <= N+1." Each dead-letter copy names its record (source topic,
// partition, offset).
//
// On kfake and PostgreSQL. m4's handler fails with an ordinary error every
// time, so the router's retries in place (MaxAttempts 3) are what bound
// it; a permanent error would be tried once. The first dead-letter publish
// of m2 is held, and while it is held the group's committed offset must
// not have passed m2; it then fails, so m2 is nacked, redelivered and
// dead-lettered by the second publish. Lag 0 is asserted as "nothing
// redelivered" to a new member of the group, not as a time.
func TestS18PoisonOffsetMovesAfterDeadLetter(t *testing.T) {
	t.Parallel()
	be := pgBackend(t)
	topic, group := unique("orders"), unique("billing")
	pub := newPublisher(t)
	const maxAttempts = 3
	type order struct {
		ID string `json:"id"`
	}
	var mu sync.Mutex
	attempts := map[string]int{}
	decode := router.JSON(func(ctx context.Context, tx TTxPG, msg *message.Message, _ order) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		if id == "E4" {
			return errFlaky // always: retried in place, then dead-lettered
		}
		return be.apply(ctx, tx, id)
	})
	handle := func(ctx context.Context, tx TTxPG, msg *message.Message) error {
		id, _ := ackgap.EventIDFromContext(ctx)
		mu.Lock()
		attempts[id]++
		mu.Unlock()
		return decode(ctx, tx, msg)
	}
	dead := &heldDeadLetter{pub: pub, holdID: "E2", held: make(chan struct{}), release: make(chan struct{}),
		published: map[string]int{}, publishedReasons: map[string]string{}}
	rep := &reports{}
	r, err := router.New[TTxPG](be.store, &router.Config{DeadLetter: dead, DeadLetterTopic: topic + ".dlq",
		MaxAttempts: maxAttempts, RetryInitialInterval: 100 * time.Millisecond, RetryMaxInterval: time.Second,
		InboxConfig: middleware.InboxConfig{Observer: rep.observe}, Logger: testLogger()})
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("c1", topic, newSubscriber(t, group, nil), handle))
	run := start(t, r)

	m2 := event(t, "E2", "p0")
	m2.Payload = []byte("\x00not json")
	for _, msg := range []*message.Message{event(t, "E1", "p0"), m2, event(t, "E3", "p0"), event(t, "E4", "p0")} {
		require.NoError(t, pub.Publish(topic, msg)) // one key: one partition, m1..m4 at offsets 0..3
	}

	waitClosed(t, dead.held, "m2's dead-letter publish")
	offsets := committedOffsets(t, group, topic)
	t.Logf("committed offsets while m2 is held: %v", offsets)
	for p, off := range offsets {
		require.LessOrEqual(t, off, int64(1), "partition %d: the offset moved past m2 (offset 1) before its dead-letter publish was confirmed", p)
	}
	close(dead.release)

	eventually(t, 60*time.Second, "E3 applied and m4 dead-lettered", func() bool {
		dead.mu.Lock()
		defer dead.mu.Unlock()
		return dead.published["E4"] > 0 && len(rep.outcomes("E3")) > 0
	})
	require.NoError(t, run.close())

	dead.mu.Lock()
	require.Equal(t, map[string]int{"E2": 1, "E4": 1}, dead.published, "poison_routed = 2, each once")
	require.Equal(t, map[string]string{"E2": ackgap.ReasonBadPayload, "E4": ackgap.ReasonAttemptsExhausted}, dead.publishedReasons)
	dead.mu.Unlock()
	dlq := readAll(t, topic+".dlq", 2)
	sourceOffsets := map[string]string{}
	for _, msg := range dlq {
		id := msg.Metadata.Get(ackgap.MetadataEventIDKey)
		if id == "E2" {
			require.Equal(t, "\x00not json", string(msg.Payload), "original bytes")
		}
		// The record's coordinates, for a dead-letter reader to dedupe on.
		require.Equal(t, topic, msg.Metadata.Get(ackgap.MetadataSourceTopic))
		require.Equal(t, dlq[0].Metadata.Get(ackgap.MetadataSourcePartition), msg.Metadata.Get(ackgap.MetadataSourcePartition))
		require.NotEmpty(t, msg.Metadata.Get(ackgap.MetadataSourcePartition))
		sourceOffsets[id] = msg.Metadata.Get(ackgap.MetadataSourceOffset)
	}
	require.Equal(t, map[string]string{"E2": "1", "E4": "3"}, sourceOffsets)
	require.EqualValues(t, 2, topicSize(t, topic+".dlq"))
	require.Equal(t, map[string]int{"E1": 1, "E3": 1}, be.applied(t), "E1 and E3 applied once")
	mu.Lock()
	for id, n := range attempts {
		require.LessOrEqual(t, n, maxAttempts+1, "%s tried %d times", id, n)
	}
	require.Equal(t, maxAttempts, attempts["E4"], "m4 retried in place up to MaxAttempts, then dead-lettered")
	mu.Unlock()
	assertNothingRedelivered(t, topic, group) // lag back to 0: every offset committed
}
