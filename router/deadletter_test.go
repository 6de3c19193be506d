package router_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/internal/testdb"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/sqlitestore"
)

// limitedPublisher stands for a broker that cannot carry more than max
// metadata keys (as SQS cannot carry more than 10 message attributes).
type limitedPublisher struct {
	message.Publisher
	max int
}

func (p limitedPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, m := range msgs {
		if len(m.Metadata) > p.max {
			return fmt.Errorf("limited: %d metadata keys, at most %d: %w", len(m.Metadata), p.max, ackgap.ErrUnencodable)
		}
	}
	return p.Publisher.Publish(topic, msgs...)
}

// runDeadLetterRouter runs a router on GoChannel + SQLite whose handler
// fails permanently and counts its runs, dead-lettering through pub.
func runDeadLetterRouter(t *testing.T, src *gochannel.GoChannel, pub message.Publisher, runs *atomic.Int32) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, testdb.SQLitePath(t), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	_, err = store.Migrate(ctx, &stores.MigrateParams{})
	require.NoError(t, err)
	r, err := router.New[*sql.Tx](store, &router.Config{DeadLetter: pub, Logger: watermill.NopLogger{}})
	require.NoError(t, err)
	require.NoError(t, r.AddHandler("billing", "orders", src, func(context.Context, *sql.Tx, *message.Message) error {
		runs.Add(1)
		return ackgap.Permanent("account_closed", nil)
	}))
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-r.Running()
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		require.NoError(t, <-done)
	})
}

func wideMessage() *message.Message {
	msg := message.NewMessage(watermill.NewUUID(), []byte("original \xff bytes"))
	msg.Metadata.Set(ackgap.MetadataEventIDKey, "E1")
	msg.Metadata.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	for i := range 4 {
		msg.Metadata.Set(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
	}
	return msg
}

// TestDeadLetterUnencodableSendsSanitisedCopy (issue 12, item 3): a
// message the dead-letter broker cannot encode as it is (here: too many
// metadata keys once the poison keys are added) is not nacked and
// dead-lettered again forever: a sanitised copy goes out at once, with
// the original payload, the event id, reason and trace, and every original
// metadata value, byte for byte, as an attachment; the handler ran once.
func TestDeadLetterUnencodableSendsSanitisedCopy(t *testing.T) {
	t.Parallel()
	ps := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	dlq, err := ps.Subscribe(context.Background(), router.DeadLetterTopicDefault)
	require.NoError(t, err)
	var runs atomic.Int32
	runDeadLetterRouter(t, ps, limitedPublisher{Publisher: ps, max: 8}, &runs)
	msg := wideMessage()
	msg.Metadata.Set("bin", "\xff\xfe\xfa")
	require.NoError(t, ps.Publish("orders", msg))

	var dead *message.Message
	select {
	case dead = <-dlq:
		dead.Ack()
	case <-time.After(30 * time.Second):
		t.Fatal("nothing dead-lettered within 30s")
	}
	require.Equal(t, string(msg.Payload), string(dead.Payload), "the original bytes")
	require.Equal(t, msg.UUID, dead.UUID)
	require.Equal(t, "E1", dead.Metadata.Get(ackgap.MetadataEventIDKey))
	require.Equal(t, "account_closed", dead.Metadata.Get(ackgap.MetadataDeadLetterReason))
	require.Equal(t, msg.Metadata.Get("traceparent"), dead.Metadata.Get("traceparent"))
	require.Contains(t, dead.Metadata.Get(router.MetadataDeadLetterSanitized), "at most 8")
	require.LessOrEqual(t, len(dead.Metadata), 8, "the copy fits")
	var original map[string][]byte
	require.NoError(t, json.Unmarshal([]byte(dead.Metadata.Get(router.MetadataOriginalMetadata)), &original))
	for k, v := range msg.Metadata {
		require.Equal(t, []byte(v), original[k], "original metadata %q", k)
	}
	require.Equal(t, []byte("account_closed"), original[ackgap.MetadataDeadLetterReason])
	require.NotEmpty(t, original["reason_poisoned"], "Watermill's poison keys are in the attachment")
	require.Equal(t, int32(1), runs.Load(), "acked after the copy: not redelivered")
}

// TestDeadLetterCopyFailsToo: when not even the sanitised copy can be
// published, the message is nacked (redelivered: the handler runs again),
// never acked without a dead-letter copy, so the broker's redrive policy
// decides.
func TestDeadLetterCopyFailsToo(t *testing.T) {
	t.Parallel()
	ps := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, watermill.NopLogger{})
	t.Cleanup(func() { _ = ps.Close() })
	dlq, err := ps.Subscribe(context.Background(), router.DeadLetterTopicDefault)
	require.NoError(t, err)
	var runs atomic.Int32
	runDeadLetterRouter(t, ps, limitedPublisher{Publisher: ps, max: 1}, &runs)
	require.NoError(t, ps.Publish("orders", wideMessage()))
	require.Eventually(t, func() bool { return runs.Load() >= 2 }, 30*time.Second, time.Millisecond,
		"nacked and redelivered")
	select {
	case m := <-dlq:
		t.Fatalf("dead-lettered %v, though no copy could be published", m.Metadata)
	default:
	}
}
