package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

// kafkaTestBrokers returns KAFKA_BROKERS (default 127.0.0.1:9092) and a
// client on them, closed when t ends.
func kafkaTestBrokers(t *testing.T) ([]string, sarama.Client) {
	t.Helper()
	brokers := strings.Split(envOr("KAFKA_BROKERS", "127.0.0.1:9092"), ",")
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	sc.Producer.Return.Successes = true
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	client, err := sarama.NewClient(brokers, sc)
	require.NoError(t, err, "kfake at %v (KAFKA_BROKERS): start it with tools/brokers.sh start", brokers)
	t.Cleanup(func() { _ = client.Close() })
	return brokers, client
}

// leaveFinishedAbove runs kafkabroker's watermark engine in group on
// partition 0 of topic, which holds n records: it acks every record but
// the first and stops, so the group's committed offset is 0 with the n-1
// records above it recorded finished in the commit's metadata.
func leaveFinishedAbove(t *testing.T, brokers []string, group, topic string, n int) {
	t.Helper()
	sub, err := kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{
		SubscriberConfig: kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: group,
			HoldTimeout: 20 * time.Second, SessionTimeout: 2 * time.Second, CloseTimeout: 500 * time.Millisecond},
		Ordering: kafkabroker.OrderingUnordered, MaxInFlight: n,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	out, err := sub.Subscribe(context.Background(), topic)
	require.NoError(t, err)
	for range n {
		select {
		case msg := <-out:
			d, ok := ackgap.DeliveryFromContext(msg.Context())
			require.True(t, ok)
			if d.Offset != 0 {
				msg.Ack()
			}
		case <-time.After(time.Minute):
			t.Fatal("no message in 1 min")
		}
	}
	// Every ack reached the partition: only the first record is left.
	deadline := time.Now().Add(time.Minute)
	for {
		var inFlight int
		for _, st := range sub.Stats() {
			if st.Partition == 0 {
				inFlight = st.InFlight
			}
		}
		if inFlight == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "acks not settled in 1 min")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, sub.Close(), "the first record is cancelled after CloseTimeout and the watermark committed")
}

// TestStatusKafka: against kfake, "status --kafka-*" shows per partition
// the group's committed offset, the log end offset, the lag and how many
// offsets above the committed one the watermark engine recorded finished;
// a partition without a commit has none of them, and another client's
// metadata is marked, not decoded. Alone (no --dsn), and after the
// store's part with --dsn.
func TestStatusKafka(t *testing.T) {
	t.Parallel()
	const n = 6
	brokers, client := kafkaTestBrokers(t)
	admin, err := sarama.NewClusterAdminFromClient(client)
	require.NoError(t, err)
	topic := randomName("status-orders")
	require.NoError(t, admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false))
	producer, err := sarama.NewSyncProducerFromClient(client)
	require.NoError(t, err)
	defer producer.Close()
	for i := range n {
		msg, err := kafkabroker.NewEvent(fmt.Sprintf("evt-%d", i), []byte(`{}`))
		require.NoError(t, err)
		msg.Metadata.Set(kafkabroker.MetadataPartitionKey, fmt.Sprintf("k-%d", i))
		pm, err := kafkabroker.Marshaler{}.Marshal(topic, msg)
		require.NoError(t, err)
		pm.Partition = 0
		_, _, err = producer.SendMessage(pm)
		require.NoError(t, err)
	}
	group := randomName("status-billing")
	leaveFinishedAbove(t, brokers, group, topic, n)

	c := &cli{t: t, env: map[string]string{}}
	args := []string{"status", "--kafka-brokers", strings.Join(brokers, ","), "--kafka-group", group, "--kafka-topic", topic}
	var v kafkaOnlyStatusView
	c.json(&v, exitOK, args...)
	require.Equal(t, t0, v.Now)
	require.NotNil(t, v.Kafka)
	require.Equal(t, group, v.Kafka.Group)
	require.Len(t, v.Kafka.Partitions, 2)
	p0, p1 := v.Kafka.Partitions[0], v.Kafka.Partitions[1]
	require.Equal(t, int32(0), p0.Partition)
	require.NotNil(t, p0.Committed)
	require.Equal(t, int64(0), *p0.Committed, "the first record holds the watermark")
	require.Equal(t, int64(n), p0.End)
	require.Equal(t, int64(n), *p0.Lag)
	require.Equal(t, kafkaMetaFinished, p0.Metadata)
	require.Equal(t, int64(n-1), p0.FinishedAbove, "every record but the first recorded finished")
	require.Equal(t, int32(1), p1.Partition)
	require.Nil(t, p1.Committed, "nothing read, nothing committed")
	require.Nil(t, p1.Lag)
	require.Equal(t, kafkaMetaNone, p1.Metadata)
	require.Equal(t, int64(n), v.Kafka.Lag)
	require.Equal(t, 1, v.Kafka.NoCommit)

	out := c.ok(args...)
	require.Contains(t, out, "KAFKA group "+group)
	require.Regexp(t, `TOPIC\s+PARTITION\s+COMMITTED\s+END\s+LAG\s+FINISHED\n`, out)
	require.Regexp(t, regexp.QuoteMeta(topic)+`\s+0\s+0\s+6\s+6\s+5\n`, out)
	require.Regexp(t, regexp.QuoteMeta(topic)+`\s+1\s+-\s+0\s+-\s+-\n`, out)
	require.Contains(t, out, "lag 6 over 1 partition(s) with a committed offset")
	require.Contains(t, out, "1 partition(s) without a committed offset")

	// Another client's metadata: shown as such, nothing decoded.
	foreign := randomName("status-foreign")
	commitOffsetsMeta(t, brokers, foreign, topic, map[int32]int64{0: 2}, "someone-else:v3")
	c.json(&v, exitOK, "status", "--kafka-brokers", strings.Join(brokers, ","), "--kafka-group", foreign, "--kafka-topic", topic)
	require.Equal(t, kafkaMetaOther, v.Kafka.Partitions[0].Metadata)
	require.Zero(t, v.Kafka.Partitions[0].FinishedAbove)
	require.Equal(t, int64(n-2), *v.Kafka.Partitions[0].Lag)

	// With a database the Kafka part follows the store's.
	for _, b := range backends {
		if b.name != "sqlite" {
			continue
		}
		c, _ := b.open(t)
		c.ok("migrate", "up")
		out := c.ok(args...)
		require.Contains(t, out, "INBOX")
		require.Greater(t, strings.Index(out, "KAFKA group "+group), strings.Index(out, "OUTBOX"))
		var sv statusView
		c.json(&sv, exitOK, args...)
		require.NotNil(t, sv.Kafka)
		require.Equal(t, int64(n-1), sv.Kafka.Partitions[0].FinishedAbove)
	}

	// The Kafka flags go together, as with doctor.
	r := c.run("status", "--kafka-brokers", strings.Join(brokers, ","))
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--kafka-brokers needs --kafka-topic and --kafka-group")
}
