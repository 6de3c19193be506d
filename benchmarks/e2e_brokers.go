package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ackgap/ackgap/brokers/gochannelbroker"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/telemetry"
)

// The brokers of the end-to-end workload.
const (
	brokerGoChannel = "gochannel"
	brokerKafka     = "kafka"
	brokerSQS       = "sqs"
)

// allBrokers are the brokers -brokers accepts, in table order.
var allBrokers = []string{brokerGoChannel, brokerKafka, brokerSQS}

// Settings of the brokers' clients in the end-to-end workload.
const (
	// e2eSessionTimeout is the Kafka consumer group session timeout.
	e2eSessionTimeout = 6 * time.Second
	// e2eFetchMaxWait is the Kafka subscriber's fetch long-poll, as
	// examples/billing sets it: with per-ack offset commits each commit
	// queues behind the fetch, so kafkabroker's 10 ms default caps a
	// partition at about 100 messages/s.
	e2eFetchMaxWait = time.Millisecond
	// e2eCloseTimeout is the Kafka and SQS subscribers' CloseTimeout;
	// every Close happens once nothing is in flight.
	e2eCloseTimeout = 5 * time.Second
	// e2eReadyWait bounds the wait for a Kafka consumer group to be stable.
	e2eReadyWait = 30 * time.Second
	// e2eDialTimeout bounds the reachability check of a broker.
	e2eDialTimeout = 2 * time.Second
	// sqsRegion is what a local SQS server accepts, with static
	// credentials.
	sqsRegion = "us-east-1"
)

// e2eBroker is one broker of the end-to-end workload, opened for one cell:
// a topic or queue of its own, deleted by close. Each run subscribes anew
// (begin), as a restarted consumer would; the publisher is the cell's.
type e2eBroker interface {
	// system is the broker's messaging.system for package telemetry.
	system() string
	// begin starts a run: it returns a new subscriber (a new consumer
	// group member, a new queue reader, a new GoChannel) and the topics
	// the router subscribes with it.
	begin(ctx context.Context) (message.Subscriber, []string, error)
	// ready waits until the run's subscriber receives what is published.
	ready(ctx context.Context) error
	// publish sends msg, the event of order orderID, from publisher
	// goroutine g.
	publish(g int, orderID string, msg *message.Message) error
	// end ends a run, once its router closed.
	end() error
	close() error
}

// errUnreachable marks a broker that did not answer: its cells are
// reported as not measured.
var errUnreachable = errors.New("unreachable")

// dialCheck returns an error wrapping errUnreachable when nothing accepts
// TCP connections at addr.
func dialCheck(ctx context.Context, addr string) error {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, e2eDialTimeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: %w", errUnreachable, err)
	}
	return conn.Close()
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// gochannelE2E is brokers/gochannelbroker, new for each run: e2eConcurrency
// topics, each with a handler of its own, ordered (Publish returns once
// the message was acked).
type gochannelE2E struct {
	b      *gochannelbroker.Broker
	pub    message.Publisher
	topics []string
}

func newGoChannelE2E() *gochannelE2E {
	g := &gochannelE2E{}
	for i := range e2eConcurrency {
		g.topics = append(g.topics, topicPrefix+strconv.Itoa(i))
	}
	return g
}

func (*gochannelE2E) system() string { return telemetry.SystemGoChannel }

func (g *gochannelE2E) begin(context.Context) (message.Subscriber, []string, error) {
	g.b = gochannelbroker.New(nil)
	g.pub, _ = g.b.Publisher()
	sub, _ := g.b.Subscriber(consumer)
	return sub, g.topics, nil
}

func (*gochannelE2E) ready(context.Context) error { return nil }

func (g *gochannelE2E) publish(p int, _ string, msg *message.Message) error {
	return g.pub.Publish(g.topics[p%len(g.topics)], msg)
}

func (g *gochannelE2E) end() error { return g.b.Close() }

func (*gochannelE2E) close() error { return nil }

// kafkaE2E is a Kafka topic of e2eConcurrency partitions and a consumer
// group, both the cell's own, deleted by close. Each run's subscriber
// joins the group as its one member, consumes the partitions
// concurrently, and commits each offset after its ack (kafkabroker's
// default); the group's committed offsets carry over from one run to the
// next. Events are keyed by order id.
type kafkaE2E struct {
	topic, group string
	admin        sarama.ClusterAdmin
	pub          message.Publisher
	subCfg       kafkabroker.SubscriberConfig
}

// openKafkaE2E creates the cell's topic on brokers and a publisher;
// holdTime is the router's longest hold of a message
// (router.MaxHoldTime).
func openKafkaE2E(ctx context.Context, brokers []string, holdTime time.Duration) (_ *kafkaE2E, err error) {
	if err := dialCheck(ctx, brokers[0]); err != nil {
		return nil, fmt.Errorf("kafka %s: %w", brokers[0], err)
	}
	sc := sarama.NewConfig()
	sc.ClientID = kafkabroker.ClientID
	sc.Version = kafkabroker.VersionDefault
	admin, err := sarama.NewClusterAdmin(brokers, sc)
	if err != nil {
		return nil, fmt.Errorf("kafka: admin client: %w", err)
	}
	id := randomSuffix()
	k := &kafkaE2E{topic: "ackgap-bench.orders.placed." + id, group: "ackgap-bench-" + id, admin: admin}
	defer func() {
		if err != nil {
			_ = admin.Close()
		}
	}()
	if err := admin.CreateTopic(k.topic, &sarama.TopicDetail{NumPartitions: e2eConcurrency, ReplicationFactor: 1}, false); err != nil {
		return nil, fmt.Errorf("kafka: create topic %s: %w", k.topic, err)
	}
	if k.pub, err = kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, nil); err != nil {
		_ = admin.DeleteTopic(k.topic)
		return nil, err
	}
	k.subCfg = kafkabroker.SubscriberConfig{
		Brokers:        brokers,
		ConsumerGroup:  k.group,
		HoldTimeout:    holdTime,
		SessionTimeout: e2eSessionTimeout,
		FetchMaxWait:   e2eFetchMaxWait,
		CloseTimeout:   e2eCloseTimeout,
	}
	return k, nil
}

func (*kafkaE2E) system() string { return telemetry.SystemKafka }

func (k *kafkaE2E) begin(context.Context) (message.Subscriber, []string, error) {
	cfg := k.subCfg
	sub, err := kafkabroker.NewSubscriber(&cfg, nil)
	return sub, []string{k.topic}, err
}

// ready waits until the group is stable with one member: the rebalance
// that a member joining takes is not the consumer's time.
func (k *kafkaE2E) ready(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(e2eReadyWait)
	state := "unknown"
	for {
		groups, err := k.admin.DescribeConsumerGroups([]string{k.group})
		if err == nil && len(groups) == 1 {
			state = fmt.Sprintf("%s with %d members", groups[0].State, len(groups[0].Members))
			if groups[0].State == "Stable" && len(groups[0].Members) == 1 {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("kafka: consumer group %s not stable with 1 member after %s (%s)", k.group, e2eReadyWait, state)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (k *kafkaE2E) publish(_ int, orderID string, msg *message.Message) error {
	msg.Metadata.Set(kafkabroker.MetadataPartitionKey, orderID)
	return k.pub.Publish(k.topic, msg)
}

func (*kafkaE2E) end() error { return nil } // the router closed the subscriber: it left the group

func (k *kafkaE2E) close() error {
	errs := []error{k.pub.Close()}
	if err := k.admin.DeleteConsumerGroup(k.group); err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
		errs = append(errs, fmt.Errorf("kafka: delete group %s: %w", k.group, err))
	}
	if err := k.admin.DeleteTopic(k.topic); err != nil {
		errs = append(errs, fmt.Errorf("kafka: delete topic %s: %w", k.topic, err))
	}
	return errors.Join(append(errs, k.admin.Close())...)
}

// sqsE2E is a standard SQS queue per run, deleted at its end, with a
// visibility timeout of sqsbroker.VisibilityFactorDefault times the
// router's handler timeout, read by one subscriber with e2eConcurrency
// workers, in batches of sqsbroker's default 10. A queue per run, not per
// cell: fauxqs keeps answering a long poll whose client went away (the
// previous run's subscriber, closed), so it would hand the next run's
// first messages to nobody, and they would come back only after the
// visibility timeout.
type sqsE2E struct {
	transport       *http.Transport
	calls           *apiCalls // every request of every client below
	optFns          []func(*sqs.Options)
	client          *sqs.Client
	queue, queueURL string // the run's
	pub             message.Publisher
}

// openSQSE2E checks endpoint and makes the cell's publisher.
func openSQSE2E(ctx context.Context, endpoint string) (_ *sqsE2E, err error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("sqs: endpoint %q is not a URL", endpoint)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if err := dialCheck(ctx, net.JoinHostPort(u.Hostname(), port)); err != nil {
		return nil, fmt.Errorf("sqs %s: %w", endpoint, err)
	}
	s := &sqsE2E{transport: http.DefaultTransport.(*http.Transport).Clone()}
	s.transport.MaxIdleConnsPerHost = 64 // publishers and workers: the default 2 would dial per request
	s.calls = newAPICalls(s.transport)
	httpClient := &http.Client{Transport: s.calls}
	s.optFns = []func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.Region = sqsRegion
		o.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "ackgap benchmarks"}, nil
		})
		o.HTTPClient = httpClient
	}}
	// The harness's own client (the SQS modes' publisher, hand-written
	// consumers and Lambda event source) gets the fix every sqsbroker
	// client has: without it a fast ReceiveMessage response is now and
	// then lost, the SDK retries, and the lost response's messages stay
	// invisible for the whole visibility timeout (30 s stalls of whole
	// runs of the hand-written modes in -sqs-modes).
	s.client = sqs.New(sqs.Options{}, append(slices.Clone(s.optFns), sqsbroker.BufferRequestBodies)...)
	if s.pub, err = sqsbroker.NewPublisher(&sqsbroker.PublisherConfig{OptFns: s.optFns}, nil); err != nil {
		s.transport.CloseIdleConnections()
		return nil, err
	}
	return s, nil
}

func (*sqsE2E) system() string { return telemetry.SystemAWSSQS }

// begin creates the run's queue and a subscriber on it.
func (s *sqsE2E) begin(ctx context.Context) (message.Subscriber, []string, error) {
	s.queue = "ackgap-bench-" + randomSuffix()
	visibility := time.Duration(sqsbroker.VisibilityFactorDefault * float64(e2eHandlerTimeout))
	out, err := s.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(s.queue), Attributes: map[string]string{
		"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second)),
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("sqs: create queue %s: %w", s.queue, err)
	}
	s.queueURL = aws.ToString(out.QueueUrl)
	sub, err := sqsbroker.NewSubscriber(ctx, &sqsbroker.SubscriberConfig{
		OptFns:         s.optFns,
		Queue:          s.queue,
		AttemptTimeout: e2eHandlerTimeout,
		CloseTimeout:   e2eCloseTimeout,
		Workers:        e2eConcurrency,
	}, nil)
	if err != nil {
		return nil, nil, errors.Join(err, s.end())
	}
	return sub, []string{s.queue}, nil
}

func (*sqsE2E) ready(context.Context) error { return nil }

func (s *sqsE2E) publish(_ int, _ string, msg *message.Message) error {
	return s.pub.Publish(s.queue, msg)
}

// end deletes the run's queue.
func (s *sqsE2E) end() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(s.queueURL)}); err != nil {
		return fmt.Errorf("sqs: delete queue %s: %w", s.queue, err)
	}
	return nil
}

func (s *sqsE2E) close() error {
	err := s.pub.Close()
	s.transport.CloseIdleConnections()
	return err
}

// brokerProcess finds the process of a broker that tools/brokers.sh
// started (its pid file .bin/<name>.pid, in the working directory or
// above, naming a live process whose command line mentions name), so that
// its CPU time can be counted. It returns 0 when there is none, or when
// addr is not on this machine.
func brokerProcess(name, addr string) int {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0
	}
	dir, err := os.Getwd()
	if err != nil {
		return 0
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, ".bin", name+".pid")); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return 0
			}
			cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if err != nil || !strings.Contains(string(cmd), name) {
				return 0
			}
			return pid
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return 0
		}
		dir = parent
	}
}

// processCPU returns the CPU time every thread of process pid has used
// (the sum of /proc/<pid>/task/*/schedstat), and false when it cannot be
// read.
func processCPU(pid int) (time.Duration, bool) {
	if pid == 0 {
		return 0, false
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited
		}
		f, _, _ := strings.Cut(string(b), " ")
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}
