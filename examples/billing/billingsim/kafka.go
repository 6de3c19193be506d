package billingsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/examples/billing/orders"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/telemetry"
)

// Settings of the demo's Kafka consumers.
const (
	// KafkaBrokersDefault is where tools/brokers.sh start runs kfake
	// (-kafka-brokers).
	KafkaBrokersDefault = "127.0.0.1:9092"
	// KafkaSessionTimeout is the consumer group session timeout: a member
	// that stops heartbeating without leaving the group holds its
	// partitions this long.
	KafkaSessionTimeout = 6 * time.Second
	// KafkaFetchMaxWait is the subscribers' fetch long-poll. With per-ack
	// offset commits each commit queues behind the fetch on the broker
	// connection, so the wait bounds a partition's rate: kafkabroker
	// measured ~1,300 msgs/s at 1 ms against ~210 at its 10 ms default
	// (4 partitions, SQLite inbox; see kafkabroker.FetchMaxWaitDefault).
	// An idle member then sends one fetch per millisecond.
	KafkaFetchMaxWait = time.Millisecond
	// SubscriberCloseTimeout is how long a Kafka or SQS subscriber's Close
	// waits for the messages it handed out to be acked: short, so that
	// the instance the demo crashes lets go of its hung message soon
	// (unacked, its offset uncommitted, its lease not extended). Every
	// other Close happens once nothing is in flight.
	SubscriberCloseTimeout = time.Second
	// kafkaExternalParallel is how many kcat processes run at once.
	kafkaExternalParallel = 8
)

// kafkaBroker is one Kafka topic with Options.Partitions partitions,
// created for the run (and deleted at exit), consumed by every router
// instance in one consumer group, so the partitions are shared among the
// instances and move between them when one leaves or joins. Dead letters
// go to a second topic.
type kafkaBroker struct {
	brokers                []string
	topic, dlqTopic, group string
	partitions             int
	admin                  sarama.ClusterAdmin
	pub                    *kafka.Publisher
	subCfg                 kafkabroker.SubscriberConfig
	o                      Options
}

func openKafka(ctx context.Context, o Options, cfg *router.Config) (_ *kafkaBroker, err error) {
	brokers := o.KafkaBrokers
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	conn, err := d.DialContext(dctx, "tcp", brokers[0])
	cancel()
	if err != nil {
		return nil, fmt.Errorf("kafka: broker %s unreachable: %w (the local one starts with tools/brokers.sh install && tools/brokers.sh start)", brokers[0], err)
	}
	_ = conn.Close()
	sc := sarama.NewConfig()
	sc.ClientID = kafkabroker.ClientID
	sc.Version = kafkabroker.VersionDefault
	admin, err := sarama.NewClusterAdmin(brokers, sc)
	if err != nil {
		return nil, fmt.Errorf("kafka: admin client: %w", err)
	}
	id := randomHex(4)
	k := &kafkaBroker{
		brokers: brokers, topic: "billing.orders.placed." + id, group: "billing-" + id,
		partitions: o.Partitions, admin: admin, o: o,
	}
	k.dlqTopic = k.topic + ".dlq"
	var created []string
	defer func() {
		if err != nil {
			for _, t := range created {
				_ = admin.DeleteTopic(t)
			}
			_ = admin.Close()
		}
	}()
	for _, t := range []struct {
		name       string
		partitions int
	}{{k.topic, o.Partitions}, {k.dlqTopic, 1}} {
		if err := admin.CreateTopic(t.name, &sarama.TopicDetail{NumPartitions: int32(t.partitions), ReplicationFactor: 1}, false); err != nil {
			return nil, fmt.Errorf("kafka: create topic %s: %w", t.name, err)
		}
		created = append(created, t.name)
	}
	// The producer: acks from all in-sync replicas, idempotent, records
	// keyed by metadata partition_key (the order id) with murmur2.
	k.pub, err = kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, o.Logger)
	if err != nil {
		return nil, err
	}
	k.subCfg = kafkabroker.SubscriberConfig{
		Brokers:       brokers,
		ConsumerGroup: k.group,
		// The longest the router holds a message, all attempts included;
		// the rebalance timeout is set from it.
		HoldTimeout:    router.MaxHoldTime(cfg),
		SessionTimeout: KafkaSessionTimeout,
		FetchMaxWait:   KafkaFetchMaxWait,
		CloseTimeout:   SubscriberCloseTimeout,
	}
	return k, nil
}

func (k *kafkaBroker) name() string { return BrokerKafka }

func (k *kafkaBroker) location() string {
	return fmt.Sprintf("topic %s (%d partitions) at %s; dead letters to %s; deleted at exit",
		k.topic, k.partitions, strings.Join(k.brokers, ","), k.dlqTopic)
}

func (k *kafkaBroker) topology(instances int) (string, string) {
	return "partitions", fmt.Sprintf("%d, shared by %d router instances in consumer group %s (consumer %q)",
		k.partitions, instances, k.group, orders.Consumer)
}

func (k *kafkaBroker) producer() string {
	if k.o.ExternalProducer {
		return k.externalName() + ": one process per copy, header event_id, key = order id, murmur2 partitioner"
	}
	return "kafkabroker publisher: event id stamped once (kafkabroker.NewEvent), partition_key = order id"
}

func (k *kafkaBroker) system() string { return telemetry.SystemKafka }

func (k *kafkaBroker) noLease() string {
	return "a partition stays with its member until a rebalance"
}

func (k *kafkaBroker) publish(ev *event, other bool) error {
	msg, err := kafkabroker.NewEvent(ev.id, ev.payload)
	if err != nil {
		return err
	}
	key := ev.body.OrderID
	if other {
		key = k.otherKey(key)
	}
	msg.Metadata.Set(kafkabroker.MetadataPartitionKey, key)
	return k.pub.Publish(k.topic, msg)
}

// kafkaPartition returns the partition the publisher's partitioner
// (murmur2, as Java's and kcat's murmur2_random) gives key.
func kafkaPartition(key string, partitions int) int32 {
	p, _ := sarama.NewMurmur2Partitioner("").Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(key)}, int32(partitions))
	return p
}

// otherKey returns a partition key derived from orderID that lands on
// another partition than orderID: the concurrent copy goes there, as when
// a producer's partitioner or the topic's partition count changed between
// two sends of one event, so that two instances race on it.
func (k *kafkaBroker) otherKey(orderID string) string {
	home := kafkaPartition(orderID, k.partitions)
	for n := 1; ; n++ {
		key := orderID + "/copy" + strconv.Itoa(n)
		if kafkaPartition(key, k.partitions) != home || k.partitions < 2 {
			return key
		}
	}
}

// publishersPerPartition: one, so each partition's records are sent in
// order (Sarama batches the concurrent sends of the P goroutines).
func (k *kafkaBroker) publishersPerPartition() int { return 1 }

func (k *kafkaBroker) waitsForAck() bool { return false }

func (k *kafkaBroker) subscriber(context.Context, int) (message.Subscriber, string, error) {
	cfg := k.subCfg
	sub, err := kafkabroker.NewSubscriber(&cfg, k.o.Logger)
	return sub, k.topic, err
}

// ready waits until the group is stable with n members: the time it takes
// to form (a rebalance per member that joins) is not the consumer's.
func (k *kafkaBroker) ready(ctx context.Context, n int) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	state := "unknown"
	for {
		groups, err := k.admin.DescribeConsumerGroups([]string{k.group})
		if err == nil && len(groups) == 1 {
			state = fmt.Sprintf("%s with %d members", groups[0].State, len(groups[0].Members))
			if groups[0].State == "Stable" && len(groups[0].Members) == n {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("kafka: consumer group %s not stable with %d members after 1m (%s)", k.group, n, state)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (k *kafkaBroker) deadLetter() (message.Publisher, string) { return k.pub, k.dlqTopic }

func (k *kafkaBroker) crashEffect() string {
	return "its offset was not committed, and the partition's next owner in the group read it again"
}

func (k *kafkaBroker) close() error {
	errs := []error{k.pub.Close()}
	// The group is empty by now (every member left when its router
	// closed); kfake keeps groups and topics in memory until deleted.
	if err := k.admin.DeleteConsumerGroup(k.group); err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
		errs = append(errs, fmt.Errorf("delete group %s: %w", k.group, err))
	}
	for _, t := range []string{k.topic, k.dlqTopic} {
		if err := k.admin.DeleteTopic(t); err != nil {
			errs = append(errs, fmt.Errorf("delete topic %s: %w", t, err))
		}
	}
	errs = append(errs, k.admin.Close())
	return errors.Join(errs...)
}

func (k *kafkaBroker) externalName() string { return "kcat (librdkafka)" }

// produceExternal publishes evs with kcat, one process per copy (kcat's
// -H sets a header on every record of a run): the payload on stdin, the
// event id as header event_id, the order id as the record key, and
// librdkafka's murmur2 partitioner, so an order lands on the partition the
// Go producer would pick.
func (k *kafkaBroker) produceExternal(ctx context.Context, evs []*event) error {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		return fmt.Errorf("kcat not found (tools/brokers.sh install installs the Debian package): %w", err)
	}
	sem := make(chan struct{}, kafkaExternalParallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, ev := range evs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cmd := exec.CommandContext(ctx, kcat, "-b", strings.Join(k.brokers, ","), "-t", k.topic, "-P",
				"-H", ackgap.MetadataEventIDKey+"="+ev.id, "-k", ev.body.OrderID, "-X", "partitioner=murmur2_random")
			cmd.Stdin = strings.NewReader(string(ev.payload) + "\n")
			if out, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("kcat -P %s: %w: %s", ev.id, err, strings.TrimSpace(string(out))))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
