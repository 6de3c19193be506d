package sqsbroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/brokers/sqsbroker"
)

// TestConfigStaticProblemsAllAtOnce: every field problem is reported in one
// error wrapping "invalid config", before any call to SQS.
func TestConfigStaticProblemsAllAtOnce(t *testing.T) {
	t.Parallel()
	_, err := sqsbroker.NewSubscriber(context.Background(), &sqsbroker.SubscriberConfig{
		MaxNumberOfMessages: 11,
		WaitTimeSeconds:     25,
		NackDelay:           500 * time.Millisecond,
		VisibilityFactor:    -1,
		AttemptTimeout:      13 * time.Hour,
		Workers:             -1,
		CloseTimeout:        -time.Second,
	}, nil)
	require.ErrorContains(t, err, "invalid config: ")
	for _, want := range []string{
		"Queue is empty", "no AWS region", "no AWS credentials", "MaxNumberOfMessages is 11", "WaitTimeSeconds is 25",
		"NackDelay is 500ms", "VisibilityFactor is -1", "AttemptTimeout is 13h0m0s", "Workers is -1", "CloseTimeout is -1s",
	} {
		require.ErrorContains(t, err, want)
	}

	_, err = sqsbroker.NewSubscriber(context.Background(), nil, nil)
	require.ErrorContains(t, err, "invalid config: SubscriberConfig is nil")
}

// TestConfigVisibilityTooShort: the queue's VisibilityTimeout, read with
// GetQueueAttributes at construction, must be at least VisibilityFactor
// (6) × AttemptTimeout; the error names both. Heartbeat off multiplies the
// requirement by MaxNumberOfMessages.
func TestConfigVisibilityTooShort(t *testing.T) {
	t.Parallel()
	c := client(t)
	name, url := createQueue(t, c, "cfg", 10*time.Second, nil)
	newSub := func(tune func(*sqsbroker.SubscriberConfig)) (*sqsbroker.Subscriber, error) {
		cfg := &sqsbroker.SubscriberConfig{OptFns: optFns(t), Queue: name}
		tune(cfg)
		sub, err := sqsbroker.NewSubscriber(context.Background(), cfg, nil)
		if sub != nil {
			t.Cleanup(func() { _ = sub.Close() })
		}
		return sub, err
	}

	_, err := newSub(func(c *sqsbroker.SubscriberConfig) { c.AttemptTimeout = 5 * time.Second })
	require.ErrorContains(t, err, "invalid config: ")
	require.ErrorContains(t, err, "VisibilityTimeout 10s, less than VisibilityFactor 6 × AttemptTimeout 5s = 30s")

	_, err = newSub(func(c *sqsbroker.SubscriberConfig) {}) // defaults: 6 × 30 s
	require.ErrorContains(t, err, "VisibilityTimeout 10s, less than VisibilityFactor 6 × AttemptTimeout 30s = 3m0s")

	_, err = newSub(func(c *sqsbroker.SubscriberConfig) {
		c.AttemptTimeout = time.Second
		c.DisableHeartbeat = true
		c.MaxNumberOfMessages = 10
	})
	require.ErrorContains(t, err, "VisibilityFactor 6 × AttemptTimeout 1s × MaxNumberOfMessages 10")

	_, err = newSub(func(c *sqsbroker.SubscriberConfig) {
		c.AttemptTimeout = time.Second
		c.HeartbeatInterval = 6 * time.Second
	})
	require.ErrorContains(t, err, "HeartbeatInterval is 6s, more than half of queue "+name+"'s VisibilityTimeout 10s")

	sub, err := newSub(func(c *sqsbroker.SubscriberConfig) { c.AttemptTimeout = time.Second })
	require.NoError(t, err, "10s >= 6 × 1s")
	q := sub.Queue()
	require.Equal(t, name, q.Name)
	require.Equal(t, url, q.URL)
	require.Equal(t, 10*time.Second, q.VisibilityTimeout)
	require.Equal(t, 4*24*time.Hour, q.MessageRetention, "SQS's default retention")
	cfg := sub.Config()
	require.Equal(t, 10*time.Second/3, cfg.HeartbeatInterval)
	require.Equal(t, 10, cfg.MaxNumberOfMessages)
	require.Equal(t, 20, cfg.WaitTimeSeconds)
	require.Equal(t, time.Second, cfg.NackDelay)

	// Subscribe reads only the queue it was checked against.
	_, err = sub.Subscribe(context.Background(), "another-queue")
	require.ErrorContains(t, err, "reads queue "+name+" only")

	// By URL too; a heartbeat-off subscriber defaults to batches of 1.
	sub, err = newSub(func(c *sqsbroker.SubscriberConfig) {
		c.Queue = url
		c.AttemptTimeout = time.Second
		c.DisableHeartbeat = true
	})
	require.NoError(t, err)
	require.Equal(t, 1, sub.Config().MaxNumberOfMessages)
}

// TestConfigMissingQueue: NewSubscriber never creates a queue.
func TestConfigMissingQueue(t *testing.T) {
	t.Parallel()
	_, err := sqsbroker.NewSubscriber(context.Background(), &sqsbroker.SubscriberConfig{
		OptFns: optFns(t), Queue: "no-such-queue-" + randomHex(4),
	}, nil)
	var missing *types.QueueDoesNotExist
	require.ErrorAs(t, err, &missing)

	_, err = sqsbroker.NewDeadLetterPublisher(context.Background(), &sqsbroker.PublisherConfig{OptFns: optFns(t)}, "no-such-dlq-"+randomHex(4), nil)
	require.ErrorAs(t, err, &missing)

	_, err = sqsbroker.NewPublisher(&sqsbroker.PublisherConfig{OptFns: []func(*sqs.Options){}}, nil)
	require.ErrorContains(t, err, "invalid config: no AWS region")
}
