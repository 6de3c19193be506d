// Package kconf builds the consumers' ConfigMap behind an interface of its
// own (wave 16, edge-api's KafkaConfigMapService).
package kconf

import "github.com/confluentinc/confluent-kafka-go/v2/kafka"

// Service gives ConfigMaps.
type Service interface {
	ConsumerConfig(group string) kafka.ConfigMap
}

type service struct{}

// New returns the service.
func New() Service { return service{} }

// ConsumerConfig sets the group and leaves librdkafka's defaults:
// enable.auto.commit and enable.auto.offset.store on.
func (service) ConsumerConfig(group string) kafka.ConfigMap {
	m := kafka.ConfigMap{}
	_ = m.SetKey("group.id", group)
	_ = m.SetKey("auto.offset.reset", "earliest")
	return m
}
