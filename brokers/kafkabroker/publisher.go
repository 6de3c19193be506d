package kafkabroker

import (
	"errors"
	"fmt"
	"slices"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/ackgap/ackgap"
)

// Settings of [NewPublisher] that are not fields of [PublisherConfig].
const (
	// ProducerRetryMax is Sarama's Producer.Retry.Max: how many times a
	// failed produce request is retried before Publish returns an error
	// (watermill-kafka's default; Sarama's is 3). With the idempotent
	// producer a retry neither duplicates nor reorders records.
	ProducerRetryMax = 10
	// ClientID is the Kafka client.id of ackgap's clients: it names them in
	// broker logs and quotas.
	ClientID = "ackgap"
)

// PublisherConfig configures [NewPublisher]. Fields left zero take the
// default named in their doc.
type PublisherConfig struct {
	// Brokers are the bootstrap addresses, "host:port". Required.
	Brokers []string
	// PartitionKey is the metadata key whose value becomes the Kafka record
	// key; the partitioner (murmur2, like the Java client's default) sends
	// one key to one partition, so one aggregate's events stay in order.
	// A message whose value for it is empty is keyed by its event id.
	// Default MetadataPartitionKey ("partition_key").
	PartitionKey string
	// Version is the Kafka protocol version Sarama speaks. Default
	// VersionDefault (2.8); at least VersionMin (2.1). See [VersionDefault].
	Version sarama.KafkaVersion
	// ConfigureSarama, when set, is called on the Sarama config after
	// ackgap's settings, for TLS, SASL or a client id. NewPublisher then
	// checks that the producer still waits for all in-sync replicas and is
	// idempotent; changing either is a config error. Default nil.
	ConfigureSarama func(c *sarama.Config)
}

// WithDefaults returns a copy of c with every zero field set to its default.
func (c PublisherConfig) WithDefaults() PublisherConfig {
	if c.PartitionKey == "" {
		c.PartitionKey = MetadataPartitionKey
	}
	if c.Version == (sarama.KafkaVersion{}) {
		c.Version = VersionDefault
	}
	return c
}

func (c PublisherConfig) validate() error {
	var errs []error
	errs = append(errs, validateBrokers(c.Brokers), validateVersion(c.Version))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	return nil
}

// SaramaConfig returns the Sarama producer config NewPublisher uses for c
// (after WithDefaults and ConfigureSarama): required acks from all in-sync
// replicas (Sarama's default waits for the leader only, and a leader that
// dies before replicating loses an acknowledged record), the idempotent
// producer with one request in flight (retries neither duplicate nor
// reorder records within a partition), ProducerRetryMax retries, the
// murmur2 partitioner (the Java client's default, so a key maps to the
// same partition whichever language produced it), and Return.Successes
// (Publish is synchronous).
func (c PublisherConfig) SaramaConfig() *sarama.Config {
	c = c.WithDefaults()
	sc := kafka.DefaultSaramaSyncPublisherConfig()
	sc.ClientID = ClientID
	sc.Version = c.Version
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Idempotent = true
	sc.Net.MaxOpenRequests = 1
	sc.Producer.Retry.Max = ProducerRetryMax
	sc.Producer.Return.Successes = true
	sc.Producer.Partitioner = sarama.NewMurmur2Partitioner
	// watermill-kafka waits 2 s between metadata retries; Sarama's 250 ms
	// default suits topics that are auto-created on first use.
	sc.Metadata.Retry.Backoff = sarama.NewConfig().Metadata.Retry.Backoff
	if c.ConfigureSarama != nil {
		c.ConfigureSarama(sc)
	}
	return sc
}

// NewPublisher returns a watermill-kafka publisher with the safe producer
// settings of [PublisherConfig.SaramaConfig] and [Marshaler]: every
// metadata key (the event id, W3C traceparent, the dead-letter reason)
// travels as a Kafka header, and the record key is the partition key.
// Publish is synchronous: it returns once the brokers acknowledged the
// record. logger may be nil (no logs). It returns an error wrapping
// "invalid config" naming every bad field, or Sarama's error when no broker
// answers.
func NewPublisher(cfg *PublisherConfig, logger watermill.LoggerAdapter) (*kafka.Publisher, error) {
	if cfg == nil {
		return nil, errors.New("invalid config: PublisherConfig is nil: Brokers is required")
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	sc := c.SaramaConfig()
	var errs []error
	if sc.Producer.RequiredAcks != sarama.WaitForAll {
		errs = append(errs, fmt.Errorf("ConfigureSarama set Producer.RequiredAcks to %d: ackgap needs WaitForAll (-1), or an acknowledged record can be lost", sc.Producer.RequiredAcks))
	}
	if !sc.Producer.Idempotent {
		errs = append(errs, errors.New("ConfigureSarama turned Producer.Idempotent off: a retried produce request could then write a record twice or out of order"))
	}
	if err := sc.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("sarama: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	pub, err := kafka.NewPublisher(kafka.PublisherConfig{
		Brokers:               c.Brokers,
		Marshaler:             Marshaler{PartitionKey: c.PartitionKey},
		OverwriteSaramaConfig: sc,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("kafkabroker: publisher: %w", err)
	}
	return pub, nil
}

// Marshaler converts between Watermill messages and Kafka records for
// ackgap. The zero value is ready to use. It is safe for concurrent use.
//
// Marshal writes the message UUID (header "_watermill_message_uuid") and
// every metadata key as a header, in key order, and sets the record key to
// the partition key (see [PublisherConfig.PartitionKey]). It refuses a
// message without an event id, wrapping ackgap.ErrMissingEventID: the
// producer must stamp one ([NewEvent], [StampEventID]). The one exception
// is a dead-lettered message (metadata ackgap.MetadataDeadLetterReason
// set): it is forwarded as it arrived, and arriving without an event id
// may be why it is being dead-lettered.
//
// Unmarshal is watermill-kafka's DefaultMarshaler.Unmarshal: every header
// becomes a metadata key, so the event id and trace context arrive in
// msg.Metadata; partition, offset, key and timestamp are in the message
// context ([PartitionFromContext], [OffsetFromContext]).
type Marshaler struct {
	// PartitionKey is the metadata key of the record key; "" means
	// MetadataPartitionKey. An empty value falls back to the event id.
	PartitionKey string
}

// Marshal implements kafka.Marshaler.
func (m Marshaler) Marshal(topic string, msg *message.Message) (*sarama.ProducerMessage, error) {
	if msg.Metadata.Get(kafka.UUIDHeaderKey) != "" {
		return nil, fmt.Errorf("kafkabroker: metadata key %q is reserved for the Watermill message UUID", kafka.UUIDHeaderKey)
	}
	eventID := msg.Metadata.Get(ackgap.MetadataEventIDKey)
	if eventID == "" && msg.Metadata.Get(ackgap.MetadataDeadLetterReason) == "" {
		return nil, fmt.Errorf("kafkabroker: publish message %s to %q: %w (stamp one with NewEvent or StampEventID)",
			msg.UUID, topic, ackgap.ErrMissingEventID)
	}
	keys := make([]string, 0, len(msg.Metadata))
	for k := range msg.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	headers := make([]sarama.RecordHeader, 0, len(keys)+1)
	headers = append(headers, sarama.RecordHeader{Key: []byte(kafka.UUIDHeaderKey), Value: []byte(msg.UUID)})
	for _, k := range keys {
		headers = append(headers, sarama.RecordHeader{Key: []byte(k), Value: []byte(msg.Metadata[k])})
	}
	out := &sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(msg.Payload), Headers: headers}
	pk := m.PartitionKey
	if pk == "" {
		pk = MetadataPartitionKey
	}
	key := msg.Metadata.Get(pk)
	if key == "" {
		key = eventID
	}
	if key != "" {
		out.Key = sarama.StringEncoder(key)
	}
	return out, nil
}

// Unmarshal implements kafka.Unmarshaler.
func (Marshaler) Unmarshal(rec *sarama.ConsumerMessage) (*message.Message, error) {
	return kafka.DefaultMarshaler{}.Unmarshal(rec)
}

func validateBrokers(brokers []string) error {
	if len(brokers) == 0 {
		return errors.New("Brokers is empty: at least one bootstrap address (host:port) is required")
	}
	for i, b := range brokers {
		if b == "" {
			return fmt.Errorf("Brokers[%d] is empty", i)
		}
	}
	return nil
}

func validateVersion(v sarama.KafkaVersion) error {
	if !v.IsAtLeast(VersionMin) {
		return fmt.Errorf("Version is %s, must be at least %s (Kafka 4.0 removed older request versions, KIP-896)", v, VersionMin)
	}
	return nil
}
