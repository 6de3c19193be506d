package sqsbroker_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
)

// wmQueues creates the suite's topics as queues on first use (the
// publisher is configured not to create queues, as in production) and
// deletes them when the test ends.
type wmQueues struct {
	t    *testing.T
	c    *sqs.Client
	mu   sync.Mutex
	made map[string]bool
}

func (q *wmQueues) ensure(topic string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.made[topic] {
		return nil
	}
	out, err := q.c.CreateQueue(context.Background(), &sqs.CreateQueueInput{
		QueueName:  aws.String(topic),
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(30)},
	})
	if err != nil {
		return err
	}
	url := aws.ToString(out.QueueUrl)
	q.t.Cleanup(func() { _, _ = q.c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	q.made[topic] = true
	return nil
}

// wmPublisher stamps an event id on Watermill's test messages (the
// subscriber refuses a message without one) and creates the queue first.
type wmPublisher struct {
	message.Publisher
	q *wmQueues
}

func (p wmPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := p.q.ensure(topic); err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Metadata.Get(ackgap.MetadataEventIDKey) == "" {
			m.Metadata.Set(ackgap.MetadataEventIDKey, m.UUID)
		}
	}
	return p.Publisher.Publish(topic, msgs...)
}

// wmSubscriber makes a sqsbroker subscriber per topic (one reads one
// queue), with a short CloseTimeout: the suite's TestMessageCtx expects an
// unacked message's context to end soon after Close.
type wmSubscriber struct {
	t    *testing.T
	q    *wmQueues
	mu   sync.Mutex
	subs []*sqsbroker.Subscriber
}

func (s *wmSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := s.q.ensure(topic); err != nil {
		return nil, err
	}
	sub, err := sqsbroker.NewSubscriber(context.Background(), &sqsbroker.SubscriberConfig{
		OptFns: optFns(s.t), Queue: topic, AttemptTimeout: 5 * time.Second, CloseTimeout: time.Second,
	}, testLogger())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	return sub.Subscribe(ctx, topic)
}

func (s *wmSubscriber) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, sub := range s.subs {
		errs = append(errs, sub.Close())
	}
	return errors.Join(errs...)
}

// TestWatermillPubSubSuite runs Watermill's own Pub/Sub suite on
// sqsbroker's publisher and subscriber (design invariant 9: every broker
// adapter runs it). A queue is a work queue: its subscribers compete for its
// messages, and there is no consumer group that gets a copy of each
// (ConsumerGroups false: fan-out is SNS's job); a standard queue keeps no
// order (GuaranteedOrder false) and may deliver twice (ExactlyOnceDelivery
// false), and messages wait in the queue for a subscriber (Persistent).
func TestWatermillPubSubSuite(t *testing.T) {
	endpoint(t)
	newPair := func(t *testing.T) (message.Publisher, message.Subscriber) {
		q := &wmQueues{t: t, c: client(t), made: map[string]bool{}}
		pub, err := sqsbroker.NewPublisher(&sqsbroker.PublisherConfig{OptFns: optFns(t)}, testLogger())
		if err != nil {
			t.Fatal(err)
		}
		return wmPublisher{pub, q}, &wmSubscriber{t: t, q: q}
	}
	tests.TestPubSub(t, tests.Features{
		ConsumerGroups:      false,
		ExactlyOnceDelivery: false,
		GuaranteedOrder:     false,
		Persistent:          true,
		ForceShort:          true,
	}, newPair, nil)
}
