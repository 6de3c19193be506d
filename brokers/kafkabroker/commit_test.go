package kafkabroker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
)

// member holds a real consumer-group membership on kfake, so commits can
// be sent with its generation and member id (or with stale ones).
type member struct {
	gen    int32
	id     string
	client sarama.Client
	sc     *sarama.Config
}

type holdHandler struct {
	joined chan sarama.ConsumerGroupSession
}

func (h holdHandler) Setup(s sarama.ConsumerGroupSession) error {
	select {
	case h.joined <- s:
	default:
	}
	return nil
}
func (holdHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (holdHandler) ConsumeClaim(s sarama.ConsumerGroupSession, _ sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}

// joinGroup makes a member of group for topic (created with one record)
// and keeps it until t ends.
func joinGroup(t *testing.T, topic, group string) member {
	t.Helper()
	env := os.Getenv("KAFKA_BROKERS")
	if env == "" {
		env = "127.0.0.1:9092"
	}
	return joinGroupOn(t, strings.Split(env, ","), topic, group)
}

// joinGroupOn is joinGroup on the broker at brokers.
func joinGroupOn(t *testing.T, brokers []string, topic, group string) member {
	t.Helper()
	cfg := ParallelConfig{SubscriberConfig: SubscriberConfig{Brokers: brokers, ConsumerGroup: group, SessionTimeout: 2 * time.Second}}.WithDefaults()
	sc := cfg.SaramaConfig()
	sc.Producer.Return.Successes = true
	client, err := sarama.NewClient(brokers, sc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	producer, err := sarama.NewSyncProducerFromClient(client)
	require.NoError(t, err)
	_, _, err = producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("x")})
	require.NoError(t, err)
	require.NoError(t, producer.Close())

	cg, err := sarama.NewConsumerGroupFromClient(group, client)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	h := holdHandler{joined: make(chan sarama.ConsumerGroupSession, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = cg.Consume(ctx, []string{topic}, h)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; _ = cg.Close() })
	select {
	case s := <-h.joined:
		return member{gen: s.GenerationID(), id: s.MemberID(), client: client, sc: sc}
	case <-time.After(60 * time.Second):
		t.Fatal("did not join the group in 60s")
		return member{}
	}
}

func committed(t *testing.T, m member, group, topic string, partition int32) int64 {
	t.Helper()
	admin, err := sarama.NewClusterAdminFromClient(m.client)
	require.NoError(t, err)
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {partition}})
	require.NoError(t, err)
	return resp.GetBlock(topic, partition).Offset
}

// settlements registers on a fresh delivery and returns it with every
// settlement it gets.
func watched() (*ackgap.Delivery, *[]ackgap.Settlement) {
	d := &ackgap.Delivery{Confirmation: ackgap.ConfirmationReported}
	var got []ackgap.Settlement
	d.OnSettled(func(s ackgap.Settlement) { got = append(got, s) })
	return d, &got
}

// TestCommitFencedIsUnconfirmed: an offset commit sent with a stale
// generation (or an unknown member id) is refused by the coordinator; the
// message it covered is settled unconfirmed (ErrAckNotConfirmed,
// ErrCommitRefused), never confirmed, and the group's committed offset
// does not move. The same watermark, committed with the member's real
// generation, is accepted and confirmed; a lower watermark is never sent.
func TestCommitFencedIsUnconfirmed(t *testing.T) {
	t.Parallel()
	topic, group := "commit."+hexID(), "fenced."+hexID()
	m := joinGroup(t, topic, group)
	p := partitionWithRecord(t, m, topic)
	k := partitionKey{topic, p}
	require.Equal(t, int64(-1), committed(t, m, group, topic, p))

	for _, tc := range []struct {
		name   string
		gen    int32
		member string
	}{{"stale generation", m.gen - 1, m.id}, {"future generation", m.gen + 1, m.id}, {"unknown member", m.gen, "zombie-" + hexID()}} {
		logs := &levelLogs{}
		com := newOffsetCommitter(m.client, m.sc, group, tc.gen, tc.member, 0, logs)
		d, got := watched()
		com.advance(k, 1, []ackedRecord{{offset: 0, ackedAt: time.Now(), d: d}})
		require.False(t, com.flush(nil), tc.name)
		require.Len(t, *got, 1, tc.name)
		s := (*got)[0]
		require.True(t, s.Acked)
		require.True(t, s.Confirmed.IsZero(), "%s: never confirmed", tc.name)
		require.ErrorIs(t, s.Err, ackgap.ErrAckNotConfirmed)
		require.ErrorIs(t, s.Err, ErrCommitRefused)
		require.Contains(t, logs.warns(), "Offset commit refused: the acked messages below it are unconfirmed and will be redelivered unless a later commit covers them; retrying with the current watermark",
			"%s: a warning with partition and offset", tc.name)
		require.Empty(t, logs.errors(), "%s: nothing is lost: not an error", tc.name)
		t.Logf("%s: %v", tc.name, s.Err)
		// Retried with the current watermark: refused again, the delivery
		// stays unconfirmed (settled once).
		require.False(t, com.flush(nil))
		com.release(k)
		require.Len(t, *got, 1)
		require.Equal(t, int64(-1), committed(t, m, group, topic, p), "%s: the refused commit moved nothing", tc.name)
	}

	com := newOffsetCommitter(m.client, m.sc, group, m.gen, m.id, 0, watermill.NopLogger{})
	d, got := watched()
	com.advance(k, 1, []ackedRecord{{offset: 0, ackedAt: time.Now(), d: d}})
	require.True(t, com.flush(nil))
	require.Len(t, *got, 1)
	require.NoError(t, (*got)[0].Err)
	require.False(t, (*got)[0].Confirmed.IsZero())
	require.Equal(t, int64(1), committed(t, m, group, topic, p))

	// A lower watermark (a stale partition loop) is not sent.
	com.advance(k, 0, nil)
	require.True(t, com.flush(nil))
	require.Equal(t, int64(1), committed(t, m, group, topic, p), "never backwards")
	go com.run()
	com.close()
}

// TestCommitterOffsetCheck: a partition watched after an unanswered
// commit has its committed offset checked at the next round; one found
// below what the coordinator accepted from the member (here lowered by a
// stale commit of the same generation, as a late one would) is counted as
// a regression and its watermark committed again. A partition not watched,
// or released (no longer the member's), is not checked.
func TestCommitterOffsetCheck(t *testing.T) {
	t.Parallel()
	topic, group := "commit."+hexID(), "check."+hexID()
	m := joinGroup(t, topic, group)
	p := partitionWithRecord(t, m, topic)
	k := partitionKey{topic, p}
	com := newOffsetCommitter(m.client, m.sc, group, m.gen, m.id, 0, watermill.NopLogger{})
	com.accepted = &acceptedOffsets{}
	com.checkWindow = time.Minute
	lower := func() {
		t.Helper()
		require.NoError(t, sendOffsetCommit(m.client, m.sc, group, m.gen, m.id, []commitBlock{{k: k, offset: 0}})[0])
		require.Equal(t, int64(0), committed(t, m, group, topic, p))
	}
	watch := func() {
		com.mu.Lock()
		com.parts[k].watchUntil = time.Now().Add(time.Minute)
		com.mu.Unlock()
	}

	com.advance(k, 1, nil)
	require.True(t, com.round())
	require.Equal(t, int64(1), committed(t, m, group, topic, p))

	lower()
	require.True(t, com.round())
	require.Equal(t, int64(0), committed(t, m, group, topic, p), "not watched: not checked")
	_, watching := com.nextCheck()
	require.False(t, watching)

	watch()
	_, watching = com.nextCheck()
	require.True(t, watching)
	require.True(t, com.round())
	require.Equal(t, int64(1), committed(t, m, group, topic, p), "watched: found and committed again")
	require.Equal(t, int64(1), com.accepted.regressionsOf(k))

	require.True(t, com.round())
	require.Equal(t, int64(1), com.accepted.regressionsOf(k), "nothing new found")

	lower()
	com.release(k)
	com.mu.Lock()
	com.checkAt = time.Time{} // due
	com.mu.Unlock()
	require.True(t, com.round())
	require.Equal(t, int64(0), committed(t, m, group, topic, p), "released: no longer checked")
	require.Equal(t, int64(1), com.accepted.regressionsOf(k))
}

func hexID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// levelLogs is a watermill.LoggerAdapter with a Warn level that keeps the
// messages logged at warn and at error.
type levelLogs struct {
	watermill.NopLogger
	mu           sync.Mutex
	warn, errMsg []string
}

func (l *levelLogs) Warn(msg string, _ watermill.LogFields) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.warn = append(l.warn, msg)
}

func (l *levelLogs) Error(msg string, _ error, _ watermill.LogFields) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errMsg = append(l.errMsg, msg)
}

func (l *levelLogs) With(watermill.LogFields) watermill.LoggerAdapter { return l }

func (l *levelLogs) warns() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.warn)
}

func (l *levelLogs) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errMsg)
}

// TestCommitTimedOutIsOutcomeUnknown (unit, Sarama's mock broker): a
// coordinator that answers an OffsetCommit with REQUEST_TIMED_OUT (its
// append to the offsets topic outlasted offsets.commit.timeout.ms) may
// still apply it: the block's error is an unknown outcome, which the
// committer watches for a late landing, not a plain refusal.
func TestCommitTimedOutIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	const topic, group = "orders", "billing"
	mb := sarama.NewMockBroker(t, 1)
	defer mb.Close()
	mb.SetHandlerByMap(map[string]sarama.MockResponse{
		"ApiVersionsRequest":     sarama.NewMockApiVersionsResponse(t),
		"MetadataRequest":        sarama.NewMockMetadataResponse(t).SetBroker(mb.Addr(), mb.BrokerID()).SetLeader(topic, 0, mb.BrokerID()),
		"FindCoordinatorRequest": sarama.NewMockFindCoordinatorResponse(t).SetCoordinator(sarama.CoordinatorGroup, group, mb),
		"OffsetCommitRequest": sarama.NewMockOffsetCommitResponse(t).SetError(group, topic, 0, sarama.ErrRequestTimedOut).
			SetError(group, topic, 1, sarama.ErrIllegalGeneration),
	})
	conf := sarama.NewConfig()
	conf.Version = VersionDefault
	conf.ApiVersionsRequest = false        // the mock does not answer it
	conf.Net.ReadTimeout = 5 * time.Second // the mock answers at once
	client, err := sarama.NewClient([]string{mb.Addr()}, conf)
	require.NoError(t, err)
	defer client.Close()
	errs := sendOffsetCommit(client, conf, group, 1, "m1", []commitBlock{{k: partitionKey{topic, 0}, offset: 5}, {k: partitionKey{topic, 1}, offset: 7}})
	require.ErrorIs(t, errs[0], errOutcomeUnknown, "timed out: it may still land")
	require.ErrorIs(t, errs[0], sarama.ErrRequestTimedOut)
	require.Error(t, errs[1])
	require.NotErrorIs(t, errs[1], errOutcomeUnknown, "a fenced generation is refused, not unknown")
}

// partitionWithRecord returns a partition of topic that holds a record.
func partitionWithRecord(t *testing.T, m member, topic string) int32 {
	t.Helper()
	partitions, err := m.client.Partitions(topic)
	require.NoError(t, err)
	for _, q := range partitions {
		if off, err := m.client.GetOffset(topic, q, sarama.OffsetNewest); err == nil && off > 0 {
			return q
		}
	}
	t.Fatalf("no partition of %s holds a record", topic)
	return -1
}
