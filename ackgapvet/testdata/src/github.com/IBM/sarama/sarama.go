// Package sarama is a stub of IBM/sarama.
package sarama

import "context"

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
