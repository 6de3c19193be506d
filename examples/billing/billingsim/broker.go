package billingsim

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/gochannelbroker"
	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/telemetry"
)

// Broker names, the values of -broker (Options.Broker).
const (
	// BrokerGoChannel is Watermill's in-process GoChannel (the default):
	// no servers.
	BrokerGoChannel = "gochannel"
	// BrokerKafka is a Kafka cluster (Options.KafkaBrokers), through
	// brokers/kafkabroker.
	BrokerKafka = "kafka"
	// BrokerSQS is an SQS endpoint (Options.SQSEndpoint), through
	// brokers/sqsbroker.
	BrokerSQS = "sqs"
)

// demoBroker is what run needs from a broker: publish the events, give
// each router instance a subscriber of its own, take the dead letters, and
// clean up. Its three implementations are goChannelBroker, kafkaBroker and
// sqsBroker; run holds no broker-specific code.
type demoBroker interface {
	// name is the broker's name (BrokerGoChannel, ...); location says where
	// its topics or queues are, for the summary.
	name() string
	location() string
	// topology returns the summary row naming the consumers (label and
	// text) for instances router instances.
	topology(instances int) (label, text string)
	// producer describes who publishes the events, for the summary.
	producer() string
	// system is the broker's messaging.system for package telemetry
	// (telemetry.SystemGoChannel, SystemKafka or SystemAWSSQS).
	system() string
	// noLease says why the broker has no lease, for the summary; "" when
	// it has one (SQS: a message not acked by its visibility deadline goes
	// to another consumer), and then telemetry measures lease headroom.
	noLease() string

	// publish sends one copy of ev. other is true for the second copy of
	// a concurrent pair: a broker with partitions sends it to a partition
	// other than the event's own, so that two router instances race on it.
	publish(ev *event, other bool) error
	// publishersPerPartition is how many goroutines publish each
	// partition's events: 1 keeps them in order.
	publishersPerPartition() int
	// waitsForAck reports whether publish returns only once the consumer
	// acked the message (GoChannel). Otherwise run waits for the inbox's
	// reports between the producer's phases.
	waitsForAck() bool

	// subscriber returns the subscriber of router instance i, and the
	// topic (or queue) it reads. Closing it (the router does, on Close)
	// closes that instance's consumer only, never the broker.
	subscriber(ctx context.Context, i int) (message.Subscriber, string, error)
	// ready waits until n router instances consume (a Kafka group is
	// stable with n members); the clock starts after it.
	ready(ctx context.Context, n int) error
	// deadLetter returns the router's dead-letter publisher and topic.
	deadLetter() (message.Publisher, string)
	// crashEffect says what becomes of the message an instance crashed
	// with (Options.CrashRestart), for the summary.
	crashEffect() string
	// close releases the clients and deletes what the broker created for
	// the run (topics, queues, groups).
	close() error
}

// externalProducer is a broker that can have its events published by a
// client written by somebody else (Options.ExternalProducer): kcat for
// Kafka, Node's @aws-sdk/client-sqs for SQS.
type externalProducer interface {
	// produceExternal publishes one copy of each of evs with that client,
	// and returns once the client says they were sent.
	produceExternal(ctx context.Context, evs []*event) error
	// externalName names the client, for the summary.
	externalName() string
}

// openBroker opens the broker o names. cfg is the router configuration
// every instance starts from: a broker may set the handler timeout its
// lease needs (SQS) or read it (Kafka's rebalance timeout).
func openBroker(ctx context.Context, o Options, cfg *router.Config) (demoBroker, error) {
	switch o.Broker {
	case BrokerKafka:
		return openKafka(ctx, o, cfg)
	case BrokerSQS:
		return openSQS(ctx, o, cfg)
	default:
		return openGoChannel(o), nil
	}
}

// goChannelBroker is Watermill's GoChannel through brokers/gochannelbroker:
// one topic per partition, orders.placed.<p>, each read by its own router
// instance. GoChannel is fan-out (every subscriber of a topic gets every
// message, there are no consumer groups), so this is how the demo spreads
// the events over instances the way Kafka partitions do.
type goChannelBroker struct {
	b          *gochannelbroker.Broker
	pub        message.Publisher
	partitions int
}

func openGoChannel(o Options) *goChannelBroker {
	// Publish returns once the subscriber acked (gochannelbroker's
	// default, GoChannel's BlockPublishUntilSubscriberAck): one message in
	// flight per topic, like a Kafka partition consumed in order.
	b := gochannelbroker.New(&gochannelbroker.Config{Logger: o.Logger})
	pub, _ := b.Publisher() // never fails
	return &goChannelBroker{b: b, pub: pub, partitions: o.Partitions}
}

func topic(partition int) string { return orders.TopicPrefix + strconv.Itoa(partition) }

func (g *goChannelBroker) name() string { return BrokerGoChannel }

func (g *goChannelBroker) location() string {
	return fmt.Sprintf("in-process; %d topics %s<p>", g.partitions, orders.TopicPrefix)
}

func (g *goChannelBroker) topology(instances int) (string, string) {
	return "partitions", fmt.Sprintf("%d (one router instance each, consumer %q)", g.partitions, orders.Consumer)
}

func (g *goChannelBroker) producer() string { return "" }

func (g *goChannelBroker) system() string { return telemetry.SystemGoChannel }

func (g *goChannelBroker) noLease() string {
	return "the ack is final, and GoChannel never hands a message to another subscriber"
}

func (g *goChannelBroker) publish(ev *event, other bool) error {
	part := ev.partition
	if other {
		part = (part + 1) % g.partitions
	}
	msg := message.NewMessage(watermill.NewUUID(), ev.payload)
	msg.Metadata.Set(ackgap.MetadataEventIDKey, ev.id)
	return g.pub.Publish(topic(part), msg)
}

func (g *goChannelBroker) publishersPerPartition() int { return 1 }

func (g *goChannelBroker) waitsForAck() bool { return true }

// subscriber: instance i reads partition topic i. The subscriber's Close
// does nothing (the GoChannel is shared); closing the router ends its
// subscription through the subscription's context.
func (g *goChannelBroker) subscriber(_ context.Context, i int) (message.Subscriber, string, error) {
	sub, err := g.b.Subscriber(orders.Consumer)
	return sub, topic(i % g.partitions), err
}

func (g *goChannelBroker) ready(context.Context, int) error { return nil }

// deadLetter: the dead-letter topic on the same GoChannel. Nobody
// subscribes to it; the demo counts what the router sends there.
func (g *goChannelBroker) deadLetter() (message.Publisher, string) {
	return g.pub, router.DeadLetterTopicDefault
}

func (g *goChannelBroker) crashEffect() string { return "" }

func (g *goChannelBroker) close() error { return g.b.Close() }

// deadLetters counts what reaches the dead-letter topic or queue.
type deadLetters struct {
	mu      sync.Mutex
	reasons map[string]int
}

func (d *deadLetters) add(reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reasons[reason]++
}

func (d *deadLetters) snapshot() (int, map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.reasons {
		n += c
	}
	return n, maps.Clone(d.reasons)
}

// countingPublisher is the router's dead-letter publisher: it forwards to
// the broker's and counts each message the broker took, by reason.
type countingPublisher struct {
	next message.Publisher
	dl   *deadLetters
}

func (c countingPublisher) Publish(topic string, msgs ...*message.Message) error {
	for _, msg := range msgs {
		if err := c.next.Publish(topic, msg); err != nil {
			return err
		}
		c.dl.add(msg.Metadata.Get(ackgap.MetadataDeadLetterReason))
	}
	return nil
}

// Close does nothing: the broker closes its publisher.
func (countingPublisher) Close() error { return nil }

// watchedSubscriber is a router instance's subscriber: gone is closed once
// Close returned, that is once the subscriber let go of every message it
// handed out (acked, nacked, or given up on after its CloseTimeout).
type watchedSubscriber struct {
	message.Subscriber
	gone chan struct{}
	once sync.Once
}

func newWatchedSubscriber(sub message.Subscriber) *watchedSubscriber {
	return &watchedSubscriber{Subscriber: sub, gone: make(chan struct{})}
}

func (w *watchedSubscriber) Close() error {
	err := w.Subscriber.Close()
	w.once.Do(func() { close(w.gone) })
	return err
}
