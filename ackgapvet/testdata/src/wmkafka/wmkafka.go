// Package wmkafka configures watermill-kafka subscribers (field trial wave
// 6, message-processing-api H1).
package wmkafka

import "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"

func noGroup() kafka.SubscriberConfig {
	return kafka.SubscriberConfig{Brokers: []string{"k:9092"}} // want `watermill-kafka SubscriberConfig without a ConsumerGroup`
}

func emptyGroup() kafka.SubscriberConfig {
	return kafka.SubscriberConfig{Brokers: []string{"k:9092"}, ConsumerGroup: ""} // want `without a ConsumerGroup`
}

func grouped(group string) kafka.SubscriberConfig {
	return kafka.SubscriberConfig{Brokers: []string{"k:9092"}, ConsumerGroup: group}
}
