package sqsbroker_test

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ackgap/ackgap/brokers/brokertest"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/internal/mysqlbrokertest"
	"github.com/ackgap/ackgap/internal/sqlitebrokertest"
)

// suiteVisibility is the visibility timeout of the suite's queues: a
// killed subscriber's message is visible again this long after its last
// heartbeat.
const suiteVisibility = 6 * time.Second

// suiteTransport carries the suite's SQS requests; its idle connections
// are closed when the suite ends (goleak).
var suiteTransport = http.DefaultTransport.(*http.Transport).Clone()

func suiteOptFns() []func(*sqs.Options) {
	ep := os.Getenv("SQS_ENDPOINT")
	if ep == "" {
		ep = endpointDefault
	}
	return []func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(ep)
		o.Region = "us-east-1"
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "brokertest"}, nil
		})
		o.HTTPClient = &http.Client{Transport: suiteTransport}
	}}
}

// suiteBroker is sqsbroker in the redelivery suite's shape: a topic is a
// queue, created on first use with suiteVisibility (SQS's CreateQueue is
// idempotent for equal attributes); the group is the queue itself.
type suiteBroker struct{ client *sqs.Client }

func newSuiteBroker() (brokertest.Broker, error) {
	return suiteBroker{client: sqs.New(sqs.Options{}, suiteOptFns()...)}, nil
}

// suiteQueues are the queue URLs the suite created in this process,
// deleted when the suite ends.
var suiteQueues sync.Map

func (b suiteBroker) ensureQueue(ctx context.Context, name string) error {
	out, err := b.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name),
		Attributes: map[string]string{"VisibilityTimeout": "6"}})
	if err == nil {
		suiteQueues.Store(aws.ToString(out.QueueUrl), true)
	}
	return err
}

// deleteSuiteQueues deletes the queues the suite created.
func deleteSuiteQueues() {
	c := sqs.New(sqs.Options{}, suiteOptFns()...)
	suiteQueues.Range(func(url, _ any) bool {
		_, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url.(string))})
		suiteQueues.Delete(url)
		return true
	})
}

func (b suiteBroker) Publisher() (message.Publisher, error) {
	pub, err := sqsbroker.NewPublisher(&sqsbroker.PublisherConfig{OptFns: suiteOptFns()}, nil)
	if err != nil {
		return nil, err
	}
	return creatingPublisher{Publisher: pub, b: b}, nil
}

func (b suiteBroker) Subscriber(string) (message.Subscriber, error) {
	return &lazySubscriber{b: b}, nil
}

// creatingPublisher creates a topic's queue before its first publish.
type creatingPublisher struct {
	message.Publisher
	b suiteBroker
}

func (p creatingPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := p.b.ensureQueue(context.Background(), topic); err != nil {
		return err
	}
	return p.Publisher.Publish(topic, msgs...)
}

// lazySubscriber builds an sqsbroker.Subscriber for the queue named by
// Subscribe's topic, since an SQS subscriber checks its lease against one
// queue at construction.
type lazySubscriber struct {
	b    suiteBroker
	mu   sync.Mutex
	subs []*sqsbroker.Subscriber
}

func (s *lazySubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := s.b.ensureQueue(ctx, topic); err != nil {
		return nil, err
	}
	sub, err := sqsbroker.NewSubscriber(ctx, &sqsbroker.SubscriberConfig{
		OptFns: suiteOptFns(), Queue: topic, AttemptTimeout: suiteVisibility / 6, CloseTimeout: 5 * time.Second,
	}, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	return sub.Subscribe(ctx, topic)
}

func (s *lazySubscriber) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, sub := range s.subs {
		if err := sub.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func TestRedeliverySuite(t *testing.T) {
	endpoint(t)                                    // fails with instructions when no SQS server runs
	t.Cleanup(suiteTransport.CloseIdleConnections) // runs last
	t.Cleanup(deleteSuiteQueues)
	brokertest.Run(t, &brokertest.Harness[*sql.Tx]{
		Store: sqlitebrokertest.Store(),
		Features: brokertest.Features{
			NackRedelivers: true, SurvivesSubscriberCrash: true,
			// Competing consumers on one queue: a second process joining
			// mid-stream shares the messages, as a Kafka group member would.
			ConsumerGroups: true,
			RedeliveryWait: 30 * time.Second,
		},
		New: newSuiteBroker,
	})
}

// TestRedeliverySuiteMariaDB runs the same suite with the routers on the
// MariaDB store.
func TestRedeliverySuiteMariaDB(t *testing.T) {
	endpoint(t)
	t.Cleanup(suiteTransport.CloseIdleConnections)
	t.Cleanup(deleteSuiteQueues)
	brokertest.Run(t, &brokertest.Harness[*sql.Tx]{
		Store:    mysqlbrokertest.Store(),
		Features: brokertest.Features{NackRedelivers: true, SurvivesSubscriberCrash: true, ConsumerGroups: true, RedeliveryWait: 30 * time.Second},
		New:      newSuiteBroker,
	})
}
