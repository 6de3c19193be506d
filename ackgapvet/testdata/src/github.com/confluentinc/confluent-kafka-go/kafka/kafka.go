// Package kafka is a stub of confluent-kafka-go's kafka package.
package kafka

import "time"

type ConfigValue interface{}
type ConfigMap map[string]ConfigValue

func (m ConfigMap) SetKey(key string, value ConfigValue) error { return nil }

type TopicPartition struct {
	Topic     *string
	Partition int32
}

type Event interface{ String() string }

type Message struct {
	TopicPartition TopicPartition
	Key, Value     []byte
}

func (m *Message) String() string { return "" }

type Consumer struct{}

func NewConsumer(conf *ConfigMap) (*Consumer, error) { return &Consumer{}, nil }

func (c *Consumer) SubscribeTopics(topics []string, cb func(*Consumer, Event) error) error {
	return nil
}
func (c *Consumer) Poll(timeoutMs int) Event                                        { return nil }
func (c *Consumer) ReadMessage(timeout time.Duration) (*Message, error)             { return nil, nil }
func (c *Consumer) CommitMessage(m *Message) ([]TopicPartition, error)              { return nil, nil }
func (c *Consumer) StoreMessage(m *Message) ([]TopicPartition, error)               { return nil, nil }
func (c *Consumer) StoreOffsets(offsets []TopicPartition) ([]TopicPartition, error) { return nil, nil }
func (c *Consumer) Commit() ([]TopicPartition, error)                               { return nil, nil }
func (c *Consumer) Close() error                                                    { return nil }

type Producer struct{}

func (p *Producer) Produce(msg *Message, deliveryChan chan Event) error { return nil }
