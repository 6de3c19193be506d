package kafkabroker_test

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/router"
)

// TestNackResendSleep: the default is watermill-kafka's, and "none" is its
// NoSleep, which NewSubscriber passes on as is.
func TestNackResendSleep(t *testing.T) {
	t.Parallel()
	require.Equal(t, kafka.NoSleep, kafkabroker.NackResendSleepNone)
	c := kafkabroker.SubscriberConfig{}.WithDefaults()
	require.Equal(t, kafkabroker.NackResendSleepDefault, c.NackResendSleep)
	c = kafkabroker.SubscriberConfig{NackResendSleep: kafkabroker.NackResendSleepNone}.WithDefaults()
	require.Equal(t, kafkabroker.NackResendSleepNone, c.NackResendSleep)
}

func TestSubscriberConfigValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  *kafkabroker.SubscriberConfig
		want []string // every one must be in the error
	}{
		{"nil", nil, []string{"invalid config", "Brokers and ConsumerGroup are required"}},
		{"empty: every problem at once", &kafkabroker.SubscriberConfig{},
			[]string{"invalid config", "Brokers is empty", "ConsumerGroup is empty: without a consumer group no offset is committed"}},
		{"empty broker", &kafkabroker.SubscriberConfig{Brokers: []string{"a:9092", ""}, ConsumerGroup: "g"}, []string{"Brokers[1] is empty"}},
		{"handler timeout over the max.poll-like bound", &kafkabroker.SubscriberConfig{Brokers: []string{"a:9092"}, ConsumerGroup: "g", HoldTimeout: 6 * time.Minute},
			[]string{"HoldTimeout is 6m0s, must be in (0, 5m0s]"}},
		{"negative handler timeout", &kafkabroker.SubscriberConfig{Brokers: []string{"a:9092"}, ConsumerGroup: "g", HoldTimeout: -time.Second},
			[]string{"HoldTimeout is -1s"}},
		{"handler timeout beyond the rebalance timeout", &kafkabroker.SubscriberConfig{Brokers: []string{"a:9092"}, ConsumerGroup: "g",
			HoldTimeout: time.Minute, RebalanceTimeout: 61 * time.Second},
			[]string{"RebalanceTimeout is 1m1s, must be at least HoldTimeout (1m0s) + CommitMargin (5s)"}},
		{"all the rest at once", &kafkabroker.SubscriberConfig{Brokers: []string{"a:9092"}, ConsumerGroup: "g",
			SessionTimeout: 500 * time.Millisecond, CommitInterval: -time.Second, FetchMaxWait: time.Microsecond,
			CloseTimeout: -time.Second, Version: sarama.V1_0_0_0, NackResendSleep: -time.Second},
			[]string{
				"NackResendSleep is -1s, must not be negative but for NackResendSleepNone",
				"SessionTimeout is 500ms, must be in [1s, 30m0s]",
				"CommitInterval is -1s, must not be negative",
				"FetchMaxWait is 1µs, must be at least 1ms",
				"CloseTimeout is -1s, must not be negative",
				"Version is 1.0.0, must be at least 2.1.0",
			}},
		{"ConfigureSarama turns auto-commit on", &kafkabroker.SubscriberConfig{Brokers: []string{"a:9092"}, ConsumerGroup: "g",
			ConfigureSarama: func(c *sarama.Config) { c.Consumer.Offsets.AutoCommit.Enable = true }},
			[]string{"invalid config", "AutoCommit.Enable to true: set CommitInterval instead"}},
		{"ConfigureSarama shortens the rebalance timeout", &kafkabroker.SubscriberConfig{Brokers: []string{"a:9092"}, ConsumerGroup: "g",
			ConfigureSarama: func(c *sarama.Config) {
				c.Consumer.Group.Rebalance.Timeout = time.Second
				c.Consumer.Offsets.Initial = 7
			}},
			[]string{"Rebalance.Timeout to 1s, below HoldTimeout (2m0s)", "Offsets.Initial to 7"}},
		{"Sarama's own checks", &kafkabroker.SubscriberConfig{Brokers: []string{"a:9092"}, ConsumerGroup: "g",
			ConfigureSarama: func(c *sarama.Config) { c.Consumer.Group.Heartbeat.Interval = time.Hour }},
			[]string{"sarama:", "Heartbeat.Interval must be < Consumer.Group.Session.Timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sub, err := kafkabroker.NewSubscriber(tc.cfg, nil)
			require.Error(t, err)
			require.Nil(t, sub)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestSubscriberSaramaConfig(t *testing.T) {
	t.Parallel()
	sc := kafkabroker.SubscriberConfig{Brokers: []string{"a:9092"}, ConsumerGroup: "g"}.SaramaConfig()
	require.Equal(t, sarama.OffsetOldest, sc.Consumer.Offsets.Initial)
	require.False(t, sc.Consumer.Offsets.AutoCommit.Enable)
	require.Equal(t, 10*time.Millisecond, sc.Consumer.MaxWaitTime)
	require.Equal(t, 10*time.Second, sc.Consumer.Group.Session.Timeout)
	require.Equal(t, 10*time.Second/3, sc.Consumer.Group.Heartbeat.Interval)
	require.Equal(t, kafkabroker.HoldTimeoutDefault+kafkabroker.CommitMargin, sc.Consumer.Group.Rebalance.Timeout)
	require.Equal(t, sarama.V2_8_0_0, sc.Version)
	require.True(t, sc.Consumer.Return.Errors)
	require.NoError(t, sc.Validate())

	sc = kafkabroker.SubscriberConfig{CommitInterval: time.Second, HoldTimeout: 10 * time.Second, SessionTimeout: 3 * time.Second}.SaramaConfig()
	require.True(t, sc.Consumer.Offsets.AutoCommit.Enable)
	require.Equal(t, time.Second, sc.Consumer.Offsets.AutoCommit.Interval)
	require.Equal(t, 500*time.Millisecond, sc.Consumer.MaxWaitTime)
	require.Equal(t, 15*time.Second, sc.Consumer.Group.Rebalance.Timeout)
	require.Equal(t, time.Second, sc.Consumer.Group.Heartbeat.Interval)
}

func TestPublisherConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  *kafkabroker.PublisherConfig
		want []string
	}{
		{"nil", nil, []string{"invalid config", "Brokers is required"}},
		{"empty: every problem at once", &kafkabroker.PublisherConfig{Version: sarama.V0_11_0_0},
			[]string{"invalid config", "Brokers is empty", "Version is 0.11.0.0, must be at least 2.1.0 (Kafka 4.0 removed older request versions, KIP-896)"}},
		{"ConfigureSarama weakens the producer", &kafkabroker.PublisherConfig{Brokers: []string{"a:9092"},
			ConfigureSarama: func(c *sarama.Config) {
				c.Producer.RequiredAcks = sarama.WaitForLocal
				c.Producer.Idempotent = false
			}},
			[]string{"RequiredAcks to 1: ackgap needs WaitForAll", "turned Producer.Idempotent off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pub, err := kafkabroker.NewPublisher(tc.cfg, nil)
			require.Error(t, err)
			require.Nil(t, pub)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}

	sc := kafkabroker.PublisherConfig{Brokers: []string{"a:9092"}}.SaramaConfig()
	require.Equal(t, sarama.WaitForAll, sc.Producer.RequiredAcks)
	require.True(t, sc.Producer.Idempotent)
	require.Equal(t, 1, sc.Net.MaxOpenRequests)
	require.True(t, sc.Producer.Return.Successes)
	require.Equal(t, kafkabroker.ProducerRetryMax, sc.Producer.Retry.Max)
	require.NoError(t, sc.Validate())
}

func TestHoldTimeoutDefaultCoversRouterDefaults(t *testing.T) {
	t.Parallel()
	require.LessOrEqual(t, router.MaxHoldTime(nil), kafkabroker.HoldTimeoutDefault)
}
