// Package redisstream stubs watermill-redisstream's subscriber config.
package redisstream

// SubscriberConfig configures a Redis Streams subscriber; an empty
// ConsumerGroup is fan-out mode.
type SubscriberConfig struct {
	Client         interface{}
	Consumer       string
	ConsumerGroup  string
	OldestId       string
	FanOutOldestId string
}
