package idemkey

import (
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// registerViews counts each view in Redis with no record of the message
// (a new user's ledger stats): a redelivery counts it again.
func registerViews(r *message.Router, rdb *redis.Client) {
	r.AddNoPublisherHandler("views", "views", nil, func(msg *message.Message) error {
		return rdb.IncrBy(msg.Context(), "views:"+string(msg.Payload), 1).Err() // want `increments a Redis counter \(redis.Client.IncrBy\)`
	})
	r.AddNoPublisherHandler("views-once", "views", nil, func(msg *message.Message) error {
		if n, err := rdb.SAdd(msg.Context(), "seen-views", msg.UUID).Result(); err != nil || n == 0 {
			return err
		}
		return rdb.IncrBy(msg.Context(), "views:"+string(msg.Payload), 1).Err() // clean: behind a claim
	})
	r.AddNoPublisherHandler("velocity", "orders", nil, func(msg *message.Message) error {
		key := "velocity:" + string(msg.Payload)
		if err := rdb.IncrBy(msg.Context(), key, 1).Err(); err != nil { // clean: a windowed rate counter (wave 19, payment-processor)
			return err
		}
		return rdb.Expire(msg.Context(), key, time.Minute).Err()
	})
}
