package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/stores"
)

// doctorReport is the JSON output of "doctor".
type doctorReport struct {
	Checks         []check
	Failed, Warned int
}

func (r doctorReport) status(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, prefix) {
			out = append(out, c.Status)
		}
	}
	require.NotEmpty(t, out, "no check named %q in %+v", prefix, r.Checks)
	return out
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// TestDoctorStore: a current schema passes and dead rows warn (exit 0);
// a pending migration fails (exit 5).
func TestDoctorStore(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		// An empty outbox: nothing due, and the backlog says so in words.
		c.ok("migrate", "up")
		var r doctorReport
		c.json(&r, exitOK, "doctor")
		for _, ch := range r.Checks {
			if ch.Name == "outbox backlog" {
				require.True(t, strings.HasSuffix(ch.Detail, "done 0; no row is due"), ch.Detail)
			}
		}

		seed(t, c, s)
		c.json(&r, exitOK, "doctor")
		require.Equal(t, []string{checkPass}, r.status(t, "schema version"))
		require.Equal(t, []string{checkPass}, r.status(t, "inbox size"))
		// The inbox rate is status's (and the console's): per consumer over
		// the window, or since its oldest row when that is shorter.
		var st statusView
		c.json(&st, exitOK, "status")
		sum := 0.0
		for _, in := range st.Inbox {
			sum += in.PerMinute
		}
		for _, ch := range r.Checks {
			if ch.Name == "inbox size" {
				require.Contains(t, ch.Detail, fmt.Sprintf("%.2f rows/min", sum))
			}
		}
		require.Equal(t, []string{checkWarn}, r.status(t, "outbox backlog"), "two dead rows")
		require.Equal(t, []string{checkPass}, r.status(t, "outbox held rows"))
		require.Zero(t, r.Failed)

		// Held rows are reported, never warned about: they are not due.
		seedWaiting(t, s)
		c.json(&r, exitOK, "doctor")
		require.Equal(t, []string{checkPass}, r.status(t, "outbox held rows"))
		for _, ch := range r.Checks {
			switch ch.Name {
			case "outbox backlog":
				require.Contains(t, ch.Detail, "pending 3 (1 due, 1 held, 1 waiting out a retry backoff)")
				require.Contains(t, ch.Detail, "oldest due row waited 2m0s")
			case "outbox held rows":
				require.Equal(t, "1 held for dispatch or delayed (never tried, not due yet), the first until 2026-01-02T04:01:00Z (in 1m0s): "+
					"if the process holding them died, any relay claims them once their holds end", ch.Detail)
			}
		}

		_, err := s.Migrate(context.Background(), &stores.MigrateParams{Down: true, TargetVersion: 2})
		require.NoError(t, err)
		res := c.run("doctor")
		require.Equal(t, exitDoctorFailed, res.code, res.stderr)
		require.Contains(t, res.stdout, fmt.Sprintf("fail  schema version: version 2 of %d", latestVersion(t, c)))
		require.Contains(t, res.stdout, `fix: run "ackgap migrate up"`)
	})
}

// TestDoctorSQS: against fauxqs, a queue set up by the rules passes every
// check, one set up badly fails each with its fix.
func TestDoctorSQS(t *testing.T) {
	endpoint := envOr("SQS_ENDPOINT", "http://127.0.0.1:4566")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), HTTPClient: &http.Client{Transport: tr},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		})})
	ctx := context.Background()
	create := func(prefix string, attrs map[string]string) string {
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(randomName(prefix)), Attributes: attrs})
		require.NoError(t, err, "fauxqs at %s (SQS_ENDPOINT): start it with tools/brokers.sh start", endpoint)
		url := aws.ToString(out.QueueUrl)
		t.Cleanup(func() {
			_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		})
		return url
	}
	dlq := create("doctor-dlq", map[string]string{"MessageRetentionPeriod": "345600"})
	arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	good := create("doctor-good", map[string]string{
		"VisibilityTimeout": "180", "MessageRetentionPeriod": "345600",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + arn.Attributes["QueueArn"] + `","maxReceiveCount":"5"}`,
	})
	bad := create("doctor-bad", map[string]string{"VisibilityTimeout": "30", "MessageRetentionPeriod": "1209600"})

	c := &cli{t: t, env: map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION": "us-east-1", "ACKGAP_SQS_ENDPOINT": endpoint}}
	var r doctorReport
	c.json(&r, exitOK, "doctor", "--sqs-queue-url", good, "--handler-timeout", "30s", "--inbox-retention", "216h")
	require.Zero(t, r.Failed, "%+v", r.Checks)
	require.Zero(t, r.Warned, "%+v", r.Checks)
	require.Len(t, r.Checks, 3)
	require.Contains(t, r.Checks[2].Detail, "dead-letter queue retention", "the DLQ's retention counts too: 4 + 4 days <= 9 days")

	c.json(&r, exitDoctorFailed, "doctor", "--sqs-queue-url", bad, "--inbox-retention", "96h")
	badName := "sqs " + bad[strings.LastIndex(bad, "/")+1:]
	require.Equal(t, []string{checkFail}, r.status(t, badName+" visibility"))
	require.Equal(t, []string{checkFail}, r.status(t, badName+" redrive"))
	require.Equal(t, []string{checkFail}, r.status(t, badName+" inbox retention"))
	require.Equal(t, 3, r.Failed)
	for _, ch := range r.Checks {
		require.NotEmpty(t, ch.Fix, "every failing check says the fix: %+v", ch)
	}

	// The 9-day retention of the good set-up is too short for a 4+4 day
	// window once the inbox keeps only 5 days.
	res := c.run("doctor", "--sqs-queue-url", good, "--inbox-retention", "120h")
	require.Equal(t, exitDoctorFailed, res.code, res.stderr)
	require.Contains(t, res.stdout, "inbox retention 120h0m0s (5 days) < queue retention 96h0m0s (4 days) + dead-letter queue retention 96h0m0s (4 days)")

	res = (&cli{t: t, env: map[string]string{}}).run("doctor", "--sqs-queue-url", good)
	require.Equal(t, exitUsage, res.code, "no credentials: %s", res.stderr)
}

// TestDoctorKafka: against kfake, a topic whose retention the inbox
// covers and a group with committed offsets pass; a topic kept forever
// and a group that does not exist fail.
func TestDoctorKafka(t *testing.T) {
	brokers := strings.Split(envOr("KAFKA_BROKERS", "127.0.0.1:9092"), ",")
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	sc.Producer.Return.Successes = true
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	client, err := sarama.NewClient(brokers, sc)
	require.NoError(t, err, "kfake at %v (KAFKA_BROKERS): start it with tools/brokers.sh start", brokers)
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	require.NoError(t, err)
	topic := func(prefix, retentionMS string) string {
		name := randomName(prefix)
		require.NoError(t, admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
			ConfigEntries: map[string]*string{"retention.ms": &retentionMS}}, false))
		return name
	}
	good, forever := topic("doctor-good", "604800000"), topic("doctor-forever", "-1")

	// Three records on partition 0, the group committed up to the first.
	producer, err := sarama.NewSyncProducerFromClient(client)
	require.NoError(t, err)
	defer producer.Close()
	for range 3 {
		_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: good, Partition: 0, Value: sarama.StringEncoder("x")})
		require.NoError(t, err)
	}
	group := randomName("doctor-group")
	commitOffsets(t, brokers, group, good, map[int32]int64{0: 1, 1: 0})

	c := &cli{t: t, env: map[string]string{}}
	kafka := []string{"doctor", "--kafka-brokers", strings.Join(brokers, ","), "--kafka-group"}
	var r doctorReport
	c.json(&r, exitOK, append(kafka, group, "--kafka-topic", good)...)
	require.Zero(t, r.Failed, "%+v", r.Checks)
	require.Equal(t, []string{checkPass}, r.status(t, "kafka topic "+good+" retention"))
	lag := r.Checks[len(r.Checks)-1]
	require.Equal(t, checkPass, lag.Status, "%+v", lag)
	require.Contains(t, lag.Detail, "lag 2: p0=2 p1=0")

	c.json(&r, exitDoctorFailed, append(kafka, group, "--kafka-topic", forever, "--inbox-retention", "96h")...)
	require.Equal(t, []string{checkFail}, r.status(t, "kafka topic "+forever+" retention"))

	c.json(&r, exitDoctorFailed, append(kafka, "no-such-group-"+group, "--kafka-topic", good)...)
	require.Equal(t, []string{checkFail}, r.status(t, "kafka group no-such-group-"))
	require.Equal(t, []string{checkPass}, r.status(t, "kafka topic "+good+" retention"), "7 days of topic retention, 15 of inbox")
}

// commitOffsets joins group as its only member and commits offsets
// (partition -> next offset to read) of topic.
func commitOffsets(t *testing.T, brokers []string, group, topic string, offsets map[int32]int64) {
	t.Helper()
	commitOffsetsMeta(t, brokers, group, topic, offsets, "")
}

// commitOffsetsMeta is commitOffsets with metadata on every commit.
func commitOffsetsMeta(t *testing.T, brokers []string, group, topic string, offsets map[int32]int64, metadata string) {
	t.Helper()
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	sc.Consumer.Offsets.AutoCommit.Enable = false
	cg, err := sarama.NewConsumerGroup(brokers, group, sc)
	require.NoError(t, err)
	defer cg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := &committer{topic: topic, offsets: offsets, metadata: metadata, done: cancel}
	require.NoError(t, cg.Consume(ctx, []string{topic}, h))
	require.True(t, h.committed, "the group's session never began")
}

type committer struct {
	topic     string
	offsets   map[int32]int64
	metadata  string
	done      func()
	committed bool
}

func (c *committer) Setup(s sarama.ConsumerGroupSession) error {
	for p, o := range c.offsets {
		s.MarkOffset(c.topic, p, o, c.metadata)
	}
	s.Commit()
	c.committed = true
	c.done()
	return nil
}

func (c *committer) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (c *committer) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}

// TestDoctorKafkaBehindInbox: against kfake and SQLite, the group's
// committed offsets compared with the inbox. Partition 0 holds e1, e2, e3
// and the group committed offset 1 (e1 done). Good: the inbox holds only
// e1, so nothing after the committed offset is applied (pass); e2 applied
// 10 s ago is an ack gap in flight (pass). Bad: e2 applied two hours ago
// and still not committed warns, and fails once the inbox retention could
// prune its row before the redelivery.
func TestDoctorKafkaBehindInbox(t *testing.T) {
	brokers := strings.Split(envOr("KAFKA_BROKERS", "127.0.0.1:9092"), ",")
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	sc.Producer.Return.Successes = true
	sc.Producer.Partitioner = sarama.NewManualPartitioner
	client, err := sarama.NewClient(brokers, sc)
	require.NoError(t, err, "kfake at %v (KAFKA_BROKERS): start it with tools/brokers.sh start", brokers)
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	require.NoError(t, err)
	topic := randomName("doctor-inbox")
	retentionMS := "604800000"
	require.NoError(t, admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retentionMS}}, false))
	producer, err := sarama.NewSyncProducerFromClient(client)
	require.NoError(t, err)
	defer producer.Close()
	for _, id := range []string{"e1", "e2", "e3"} {
		msg, err := kafkabroker.NewEvent(id, []byte(id))
		require.NoError(t, err)
		rec, err := kafkabroker.Marshaler{}.Marshal(topic, msg)
		require.NoError(t, err)
		rec.Partition = 0
		_, _, err = producer.SendMessage(rec)
		require.NoError(t, err)
	}
	group := randomName("doctor-group")
	commitOffsets(t, brokers, group, topic, map[int32]int64{0: 1, 1: 0})

	c, s := backends[1].open(t) // SQLite: the comparison goes through the store API alike
	c.ok("migrate", "up")
	s.inbox(t, "billing", "e1", t0.Add(-3*time.Hour))
	s.inbox(t, "shipping", "e2", t0.Add(-10*time.Second))
	name := "kafka group " + group + " offsets vs inbox on " + topic
	doctor := func(r *doctorReport, code int, consumer string, extra ...string) check {
		t.Helper()
		c.json(r, code, append([]string{"doctor", "--kafka-brokers", strings.Join(brokers, ","), "--kafka-group", group,
			"--kafka-topic", topic, "--kafka-consumer", consumer}, extra...)...)
		for _, ch := range r.Checks {
			if ch.Name == name {
				return ch
			}
		}
		require.Failf(t, "no check", "%q in %+v", name, r.Checks)
		return check{}
	}
	var r doctorReport
	ch := doctor(&r, exitOK, "billing")
	require.Equal(t, checkPass, ch.Status, "%+v", ch)
	require.Contains(t, ch.Detail, `not behind: none of the records after the committed offsets is in inbox "billing" (read 2 record(s)`)

	ch = doctor(&r, exitOK, "shipping")
	require.Equal(t, checkPass, ch.Status, "%+v", ch)
	require.Contains(t, ch.Detail, `p0: 1 of the 2 record(s) from offset 1 applied; in inbox "shipping" but not committed, the oldest applied 10s ago`)
	require.Contains(t, ch.Detail, "the ack gap of messages in flight")

	s.inbox(t, "billing", "e2", t0.Add(-2*time.Hour))
	ch = doctor(&r, exitOK, "billing")
	require.Equal(t, checkWarn, ch.Status, "%+v", ch)
	require.Contains(t, ch.Detail, `p0: 1 of the 2 record(s) from offset 1 applied; in inbox "billing" but not committed, the oldest applied 2h0m0s ago`)
	require.Contains(t, ch.Fix, "kafkabroker.ErrCommitRefused")

	ch = doctor(&r, exitDoctorFailed, "billing", "--inbox-retention", "2h")
	require.Equal(t, checkFail, ch.Status, "%+v", ch)
	require.Contains(t, ch.Detail, "applies them twice")
	require.Contains(t, ch.Fix, "retention.Config.Retention")

	// Progress rows: none yet, then a database behind the group's committed
	// offset of partition 0 (1), then level with it.
	name = "kafka group " + group + " offsets vs stored watermarks on " + topic
	ch = doctor(&r, exitOK, "billing")
	require.Equal(t, checkPass, ch.Status, "%+v", ch)
	require.Contains(t, ch.Detail, "no progress rows")
	s.progress(t, "billing", "p-1", stores.Progress{Topic: topic, Partition: 0, Watermark: 0})
	ch = doctor(&r, exitOK, "billing")
	require.Equal(t, checkWarn, ch.Status, "%+v", ch)
	require.Contains(t, ch.Detail, "p0: committed offset 1, stored watermark 0 (1 record(s) the database may not hold)")
	require.Contains(t, ch.Fix, "SubscriberConfig.Progress")
	s.progress(t, "billing", "p-2", stores.Progress{Topic: topic, Partition: 0, Watermark: 1})
	ch = doctor(&r, exitOK, "billing")
	require.Equal(t, checkPass, ch.Status, "%+v", ch)
	require.Contains(t, ch.Detail, "not behind the group on 1 partition(s)")

	// The group's offset of partition 0 deleted by hand (OffsetDelete).
	require.NoError(t, admin.DeleteConsumerGroupOffset(group, topic, 0))
	ch = doctor(&r, exitOK, "billing")
	require.Equal(t, checkWarn, ch.Status, "%+v", ch)
	require.Contains(t, ch.Detail, "p0: no committed offset, stored watermark 1")
	require.Contains(t, ch.Fix, "kafkabroker.LogGroupOffsetMissing")

	res := (&cli{t: t, env: map[string]string{}}).run("doctor", "--kafka-brokers", strings.Join(brokers, ","), "--kafka-group", group,
		"--kafka-topic", topic, "--kafka-consumer", "billing")
	require.Equal(t, exitUsage, res.code, "--kafka-consumer without --dsn: %s", res.stderr)
}

// A duration of one day reads "(1 day)", not "(1 days)" (issue 25).
func TestDaysSingular(t *testing.T) {
	require.Equal(t, "24h0m0s (1 day)", days(24*time.Hour))
	require.Equal(t, "48h0m0s (2 days)", days(48*time.Hour))
	require.Equal(t, "36h0m0s (1.5 days)", days(36*time.Hour))
}
