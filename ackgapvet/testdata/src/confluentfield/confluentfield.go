// Package confluentfield keeps its ConfigMap in a struct field, set key
// by key, and hands each polled message to indexer goroutines over a
// channel: librdkafka's background auto-commit (on by default) commits
// the offsets before the indexers have done anything.
package confluentfield

import (
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Consumer polls and hands off.
type Consumer struct {
	config kafka.ConfigMap
	out    chan []byte
}

// New keeps the config in the struct.
func New(group string) *Consumer {
	c := &Consumer{config: kafka.ConfigMap{"bootstrap.servers": "k:9092"}, out: make(chan []byte, 100)}
	_ = c.config.SetKey("group.id", group)
	return c
}

// Start polls and hands each message's value to the indexers.
func (c *Consumer) Start() error {
	consumer, err := kafka.NewConsumer(&c.config) // want `kafka.NewConsumer with "enable.auto.commit" on \(the default\) commits polled offsets in the background, before the poll loop's work \(a hand-off to another goroutine \(a channel send\) at line \d+\) is done`
	if err != nil {
		return err
	}
	for {
		switch e := consumer.Poll(100).(type) {
		case *kafka.Message:
			v := make([]byte, len(e.Value))
			copy(v, e.Value)
			c.out <- v
		}
	}
}
