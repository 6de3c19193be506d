// Package wmredis configures watermill-redisstream subscribers (field
// trial, wave 49: event-driven-go H1).
package wmredis

import "github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"

func fanOut(c interface{}) redisstream.SubscriberConfig {
	return redisstream.SubscriberConfig{Client: c} // want `watermill-redisstream SubscriberConfig without a ConsumerGroup: the subscriber reads in fan-out mode .* from the stream's newest entry`
}

func fanOutFromFirst(c interface{}) redisstream.SubscriberConfig {
	return redisstream.SubscriberConfig{Client: c, FanOutOldestId: "0"} // want `without a ConsumerGroup and FanOutOldestId "0": .* every restart handles the stream's retained messages again`
}

func grouped(c interface{}) redisstream.SubscriberConfig {
	return redisstream.SubscriberConfig{Client: c, ConsumerGroup: "splitter"}
}
