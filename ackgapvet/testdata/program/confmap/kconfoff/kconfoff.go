// Package kconfoff builds a ConfigMap with the background commit off.
package kconfoff

import "github.com/confluentinc/confluent-kafka-go/v2/kafka"

// ManualConfig commits only what the loop commits.
func ManualConfig(group string) *kafka.ConfigMap {
	m := &kafka.ConfigMap{}
	_ = m.SetKey("group.id", group)
	_ = m.SetKey("enable.auto.commit", false)
	return m
}
