// Package kafka is a stub of watermill-kafka's kafka package for analysistest.
package kafka

type SubscriberConfig struct {
	Brokers       []string
	ConsumerGroup string
}
