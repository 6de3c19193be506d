// Package appendlist: a Redis list push on every delivery appends the entry
// again on a redelivery (field trial, wave 58: crypto-trade's moving-average
// windows, where a candle pushed twice is counted twice).
package appendlist

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

type S struct{ rdb *redis.Client }

func (s *S) register(r *message.Router) {
	r.AddNoPublisherHandler("prices", "prices", nil, s.onPrice)
	r.AddNoPublisherHandler("claimed", "claimed", nil, s.onClaimed)
}

// onPrice pushes each close price onto the window: reported.
func (s *S) onPrice(msg *message.Message) error {
	return s.rdb.RPush(context.Background(), "window:btc", string(msg.Payload)).Err() // want `a Redis list push \(redis.Client.RPush\) .*appends an entry on every delivery`
}

// onClaimed claims the event id first and pushes only a new claim: not
// reported.
func (s *S) onClaimed(msg *message.Message) error {
	ctx := context.Background()
	fresh, err := s.rdb.SetNX(ctx, "seen:"+msg.UUID, 1, 24*time.Hour).Result()
	if err != nil || !fresh {
		return err
	}
	return s.rdb.RPush(ctx, "window:eth", string(msg.Payload)).Err()
}
