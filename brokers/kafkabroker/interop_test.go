package kafkabroker_test

import (
	"context"
	"database/sql"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/middleware"
	"github.com/ackgap/ackgap/router"
)

// TestKcatProducerInterop: a producer nobody here wrote (kcat, librdkafka)
// sends the same event twice with an event_id header, plus another event;
// ackgap consumes all three, applies each event once and reports the copy
// as a duplicate.
func TestKcatProducerInterop(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err, "kcat not found: tools/brokers.sh install installs it (Debian package kcat)")
	brokers := kafkaBrokers(t)
	topic, group := unique("kcat"), unique("g")

	// One record per line; -H sets a header on every record of the run.
	produce := func(eventID, body string) {
		cmd := exec.Command(kcat, "-b", strings.Join(brokers, ","), "-t", topic, "-P", "-H", "event_id="+eventID, "-H", "producer=kcat")
		cmd.Stdin = strings.NewReader(body + "\n")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kcat -P: %s", out)
	}
	produce("kcat-1", `{"order_id":"o1"}`)
	produce("kcat-1", `{"order_id":"o1"}`)
	produce("kcat-2", `{"order_id":"o2"}`)

	b := sqliteBackend(t)
	rep := &reports{}
	dlq := newPublisher(t)
	r, err := router.New[*sql.Tx](b.store, &router.Config{DeadLetter: dlq, DeadLetterTopic: topic + ".dlq", InboxConfig: middleware.InboxConfig{Observer: rep.observe}})
	require.NoError(t, err)
	var mu sync.Mutex // records may land on different partitions, handled concurrently
	var producers []string
	require.NoError(t, r.AddHandler("billing", topic, newSubscriber(t, group, nil), func(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
		mu.Lock()
		producers = append(producers, msg.Metadata.Get("producer"))
		mu.Unlock()
		return b.apply(ctx, tx, msg.Metadata.Get(ackgap.MetadataEventIDKey))
	}))
	rn := start(t, r)
	eventually(t, 30*time.Second, "three deliveries", func() bool { return len(rep.snapshot()) >= 3 })
	require.NoError(t, rn.close())

	require.Equal(t, map[string]int{"kcat-1": 1, "kcat-2": 1}, b.applied(t))
	// The two copies may sit on different partitions: which one reports
	// first is timing, that one applied and one was a duplicate is not.
	require.ElementsMatch(t, []ackgap.Outcome{ackgap.OutcomeApplied, ackgap.OutcomeDuplicate}, rep.outcomes("kcat-1"))
	require.Equal(t, []string{"kcat", "kcat"}, producers, "other headers arrive as metadata")
}
