package billingsim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
)

// Defaults of [Options], also the defaults of the flags of the same names.
const (
	// EventsDefault is the number of orders and events (-n).
	EventsDefault = 1000
	// DupSeqDefault is the fraction of events published again after the
	// first pass (-dup-seq).
	DupSeqDefault = 0.1
	// DupCrashDefault is the fraction of events whose first delivery
	// commits and then "crashes" before the ack (-dup-crash).
	DupCrashDefault = 0.05
	// DupConcurrentDefault is the fraction of events published twice at
	// once, to two partitions (-dup-concurrent).
	DupConcurrentDefault = 0.05
	// PartitionsDefault is the number of partitions and router instances
	// (-partitions).
	PartitionsDefault = 4
	// PartitionsMax caps Partitions.
	PartitionsMax = 256
	// TimeoutDefault bounds the wait for the consumer (-timeout).
	TimeoutDefault = 2 * time.Minute
	// SeedDefault picks which events are duplicated (-seed).
	SeedDefault = 1
	// RelaysDefault is the number of outbox relay instances (-relays).
	RelaysDefault = 2
	// RelaysMax caps Relays.
	RelaysMax = 16
	// RelayCrashDefault is how many rows a relay claims and calls out for
	// before the demo kills it mid-effect (-relay-crash).
	RelayCrashDefault = 8
	// LostRepliesDefault is the fraction of orders whose first charge
	// reply is lost after the provider charged (-lost-replies).
	LostRepliesDefault = 0.05
)

// settleWait is how long run still waits for outcomes once every publish
// returned on a broker whose Publish returns after the ack (GoChannel; the
// inbox reports before the ack, so nothing should be left by then).
const settleWait = 2 * time.Second

// Options configure one run of the demo. The duplicate fractions choose
// disjoint sets of events, so each event gets at most one kind of
// duplicate and their sum is at most 1.
type Options struct {
	// Broker is BrokerGoChannel (in-process, the default when empty),
	// BrokerKafka or BrokerSQS.
	Broker string
	// KafkaBrokers are the Kafka bootstrap addresses for BrokerKafka.
	// Empty means KafkaBrokersDefault (127.0.0.1:9092).
	KafkaBrokers []string
	// SQSEndpoint is the SQS endpoint URL for BrokerSQS. Empty means
	// SQSEndpointDefault (http://127.0.0.1:4566).
	SQSEndpoint string
	// Events is the number of orders, and of order.placed events. Zero
	// means EventsDefault (1000).
	Events int
	// DupSeq is the fraction of events published a second time once the
	// first pass was processed: a plain redelivery. Zero means none.
	DupSeq float64
	// DupCrash is the fraction of events whose first delivery commits and
	// then fails before the ack, as if the process died in the ack gap:
	// the broker delivers it again (GoChannel at once, Kafka from the same
	// offset, SQS after sqsbroker's nack delay). Zero means none.
	DupCrash float64
	// DupConcurrent is the fraction of events published twice at the same
	// instant, to two partitions (GoChannel topics, Kafka partitions) or
	// to the one SQS queue, so two router instances race on one event.
	// Zero means none; needs Partitions >= 2.
	DupConcurrent float64
	// CrashRestart crashes one router instance in the ack gap (Kafka and
	// SQS only): once a quarter of the events were applied, the first
	// instance to commit an event that has no other duplicate stops right
	// there, before its ack. The demo closes that instance's router; its
	// subscriber gives the message up after SubscriberCloseTimeout without
	// acking it (Kafka: the offset is not committed; SQS: it is not
	// deleted and its lease is no longer extended), and a replacement
	// instance starts. The broker delivers the message again (Kafka: to
	// the partition's next owner in the group; SQS: to any instance once
	// its visibility timeout lapses) and the inbox must skip it. This is
	// an in-process crash; a real SIGKILL of a consumer process is tested
	// by brokers/brokertest. The -crash-restart flag defaults to true on
	// Kafka and SQS.
	CrashRestart bool
	// ExternalProducer has the events published by a client nobody here
	// wrote instead of ackgap's publisher: kcat (librdkafka) on Kafka,
	// Node's @aws-sdk/client-sqs (tools/fauxqs/produce.mjs) on SQS. They
	// set the event id as the Kafka header or SQS message attribute
	// event_id. The sequential copies are published by it too; concurrent
	// copies are not offered (DupConcurrent must be 0).
	ExternalProducer bool
	// Partitions is the number of partitions (GoChannel topics
	// orders.placed.<p>, or the Kafka topic's partitions) and of router
	// instances; on SQS, the number of router instances on the queue.
	// Zero means PartitionsDefault (4).
	Partitions int
	// Timeout bounds the wait for every event to be applied and every
	// duplicate to be seen. Zero means TimeoutDefault (2 min).
	Timeout time.Duration
	// Seed picks the duplicated events and the lost replies. Zero means
	// SeedDefault (1).
	Seed uint64
	// Relays is the number of outbox relays that carry out the charges
	// and receipts, while the routers consume and after. Zero means
	// RelaysDefault (2).
	Relays int
	// LostReplies is the fraction of orders whose first charge call
	// succeeds at the provider but whose reply the relay never gets (a
	// timeout after the charge): the relay retries with the same
	// idempotency key, and the provider answers with the original charge.
	// Zero means none.
	LostReplies float64
	// RelayCrash is how many rows a relay started before the others claims
	// and calls the effects for, and then dies without recording any
	// outcome (as under SIGKILL): the other relays carry those rows out
	// again after its lease (CrashRelayLease), with the same idempotency
	// keys. Zero means no relay crash; ignored with RelaysDuring.
	RelayCrash int
	// RelaysDuring starts the relays with the routers, so they carry out
	// rows while the consumer writes them, as in production. By default
	// they start once the consumer finished: the consumer's numbers
	// (throughput, concurrent copies that overlapped) then stay comparable
	// with runs without relays, and the relays' throughput shows alone.
	RelaysDuring bool
	// Otel is where the run's spans and metrics are exported: OtelNone
	// (the default when empty), OtelStdout or OtelOTLP. Every router
	// instance traces its deliveries through package telemetry whatever
	// it is, and the summary gets the ack gap and lease headroom from the
	// spans.
	Otel string
	// OtelOut receives OtelStdout's JSON. Nil means os.Stdout.
	OtelOut io.Writer
	// Logger receives Watermill's logs. Nil means none.
	Logger watermill.LoggerAdapter
	// Console, when set, is the address (host:port) the web console
	// (package console) is served on from the start of the run, with the
	// live ack gap and lease headroom of this process. Empty means none.
	Console string
	// ConsoleReady, when set, gets the console's URL once it serves, and
	// the token that enables its redrive (new per run).
	ConsoleReady func(url, token string)
	// Prometheus, when set, is the address (host:port) on which the run's
	// OpenTelemetry metrics are served at /metrics in the Prometheus text
	// format, from the start of the run. Empty means none.
	Prometheus string
	// PrometheusReady, when set, gets the metrics endpoint's URL once it
	// serves.
	PrometheusReady func(url string)
	// Hold, when set, is called with the summary at the end of the run,
	// before anything is closed: the console stays up until it returns.
	Hold func(s *Summary)
}

// WithDefaults returns a copy of o with zero sizes set to their defaults;
// the fractions stay as they are (zero means no duplicates of that kind).
func (o Options) WithDefaults() Options {
	if o.Broker == "" {
		o.Broker = BrokerGoChannel
	}
	if len(o.KafkaBrokers) == 0 {
		o.KafkaBrokers = []string{KafkaBrokersDefault}
	}
	if o.SQSEndpoint == "" {
		o.SQSEndpoint = SQSEndpointDefault
	}
	if o.Events == 0 {
		o.Events = EventsDefault
	}
	if o.Partitions == 0 {
		o.Partitions = PartitionsDefault
	}
	if o.Timeout == 0 {
		o.Timeout = TimeoutDefault
	}
	if o.Seed == 0 {
		o.Seed = SeedDefault
	}
	if o.Relays == 0 {
		o.Relays = RelaysDefault
	}
	if o.Otel == "" {
		o.Otel = OtelNone
	}
	if o.OtelOut == nil {
		o.OtelOut = os.Stdout
	}
	if o.Logger == nil {
		o.Logger = watermill.NopLogger{}
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	switch o.Broker {
	case BrokerGoChannel, BrokerKafka, BrokerSQS:
	default:
		errs = append(errs, fmt.Errorf("broker is %q, must be %s, %s or %s", o.Broker, BrokerGoChannel, BrokerKafka, BrokerSQS))
	}
	switch o.Otel {
	case OtelNone, OtelStdout, OtelOTLP:
	default:
		errs = append(errs, fmt.Errorf("otel is %q, must be %s, %s or %s", o.Otel, OtelNone, OtelStdout, OtelOTLP))
	}
	if o.Broker == BrokerGoChannel && o.CrashRestart {
		errs = append(errs, errors.New("crash-restart needs a broker that keeps what an instance did not ack (kafka or sqs): GoChannel's messages die with the instance"))
	}
	if o.Broker == BrokerGoChannel && o.ExternalProducer {
		errs = append(errs, errors.New("external-producer needs kafka (kcat) or sqs (Node's @aws-sdk/client-sqs): GoChannel lives inside this process"))
	}
	for i, b := range o.KafkaBrokers {
		if strings.TrimSpace(b) == "" {
			errs = append(errs, fmt.Errorf("kafka-brokers[%d] is empty", i))
		}
	}
	if o.Events < 1 {
		errs = append(errs, fmt.Errorf("events (-n) is %d, must be at least 1", o.Events))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"dup-seq", o.DupSeq}, {"dup-crash", o.DupCrash}, {"dup-concurrent", o.DupConcurrent}, {"lost-replies", o.LostReplies}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			errs = append(errs, fmt.Errorf("%s is %g, must be in [0, 1]", f.name, f.v))
		}
	}
	seq, crash, conc := o.dupCounts()
	if seq+crash+conc > o.Events {
		errs = append(errs, fmt.Errorf("dup-seq + dup-crash + dup-concurrent select %d events of %d: the sets are disjoint, their sum must be at most 1", seq+crash+conc, o.Events))
	}
	if o.Partitions < 1 || o.Partitions > PartitionsMax {
		errs = append(errs, fmt.Errorf("partitions is %d, must be in [1, %d]", o.Partitions, PartitionsMax))
	}
	if conc > 0 && o.Partitions < 2 {
		errs = append(errs, fmt.Errorf("dup-concurrent publishes to two partitions: it needs partitions >= 2, have %d", o.Partitions))
	}
	if conc > 0 && o.ExternalProducer {
		errs = append(errs, errors.New("dup-concurrent is not offered with external-producer: set it to 0"))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout is %s, must be positive", o.Timeout))
	}
	if o.RelayCrash < 0 || o.RelayCrash > RelaysMax*RelayConcurrency {
		errs = append(errs, fmt.Errorf("relay-crash is %d, must be in [0, %d]", o.RelayCrash, RelaysMax*RelayConcurrency))
	}
	if o.Relays < 1 || o.Relays > RelaysMax {
		errs = append(errs, fmt.Errorf("relays is %d, must be in [1, %d]", o.Relays, RelaysMax))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid options: %w", err)
	}
	return nil
}

// dupCounts returns how many events get each kind of duplicate.
func (o Options) dupCounts() (seq, crash, conc int) {
	n := func(f float64) int {
		if math.IsNaN(f) || f <= 0 {
			return 0
		}
		return int(math.Round(float64(o.Events) * min(f, 1)))
	}
	return n(o.DupSeq), n(o.DupCrash), n(o.DupConcurrent)
}
