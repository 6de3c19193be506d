// Package sarama is a stub of IBM/sarama.
package sarama

import (
	"context"
	"time"
)

// Config is the client's configuration (the fields the tests set).
type Config struct {
	Consumer struct {
		Offsets struct {
			AutoCommit struct {
				Enable   bool
				Interval time.Duration
			}
			Initial int64
		}
	}
}

// NewConfig returns a Config with Sarama's defaults.
func NewConfig() *Config {
	c := &Config{}
	c.Consumer.Offsets.AutoCommit.Enable = true
	c.Consumer.Offsets.AutoCommit.Interval = time.Second
	c.Consumer.Offsets.Initial = OffsetNewest
	return c
}

// OffsetNewest and OffsetOldest are the initial offsets.
const (
	OffsetNewest int64 = -1
	OffsetOldest int64 = -2
)

type ConsumerMessage struct {
	Key, Value []byte
	Offset     int64
}

type ConsumerGroupSession interface {
	MarkMessage(msg *ConsumerMessage, metadata string)
	Commit()
	Context() context.Context
}

type ConsumerGroupClaim interface {
	Messages() <-chan *ConsumerMessage
}

type ProducerMessage struct{ Topic string }

type SyncProducer interface {
	SendMessage(msg *ProducerMessage) (int32, int64, error)
}

type Consumer interface {
	ConsumePartition(topic string, partition int32, offset int64) (PartitionConsumer, error)
}

type PartitionConsumer interface {
	Messages() <-chan *ConsumerMessage
	Close() error
}

type PartitionOffsetManager interface {
	MarkOffset(offset int64, metadata string)
}

// ConsumerGroupHandler handles a consumer group's claims.
type ConsumerGroupHandler interface {
	Setup(ConsumerGroupSession) error
	Cleanup(ConsumerGroupSession) error
	ConsumeClaim(ConsumerGroupSession, ConsumerGroupClaim) error
}

// ConsumerGroup joins a consumer group.
type ConsumerGroup interface {
	Consume(ctx context.Context, topics []string, handler ConsumerGroupHandler) error
}

// AsyncProducer publishes through channels.
type AsyncProducer interface {
	Input() chan<- *ProducerMessage
	Errors() <-chan error
}
