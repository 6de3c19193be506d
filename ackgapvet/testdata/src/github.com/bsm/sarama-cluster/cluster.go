// Package cluster is a stub of github.com/bsm/sarama-cluster: a consumer
// group over Sarama from before Sarama had its own.
package cluster

import "github.com/IBM/sarama"

// Config is a stub.
type Config struct{}

// Consumer is a stub.
type Consumer struct{}

// NewConsumer is a stub.
func NewConsumer(addrs []string, groupID string, topics []string, config *Config) (*Consumer, error) {
	return &Consumer{}, nil
}

// Messages is a stub.
func (c *Consumer) Messages() <-chan *sarama.ConsumerMessage { return nil }

// MarkOffset is a stub.
func (c *Consumer) MarkOffset(msg *sarama.ConsumerMessage, metadata string) {}

// Close is a stub.
func (c *Consumer) Close() error { return nil }
