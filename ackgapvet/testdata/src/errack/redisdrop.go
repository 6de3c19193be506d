package errack

import (
	"context"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// Books keeps order books in Redis hashes (field trial, wave 58:
// crypto-trade's UpdateOrderBookData, whose HMSET results were dropped and
// the snapshot acked without its writes).
type Books struct{ rdb *redis.Client }

func (b *Books) register(r *message.Router) {
	r.AddNoPublisherHandler("books", "books", nil, b.Update)
	r.AddNoPublisherHandler("checked", "checked", nil, b.UpdateChecked)
	r.AddNoPublisherHandler("cached", "cached", nil, b.Cache)
}

// Update stores the book and drops the HSET's result: a failed write is
// acked as done.
func (b *Books) Update(msg *message.Message) error {
	b.rdb.HSet(context.Background(), "book:"+msg.UUID, "bids", string(msg.Payload)) // want `the error of b.rdb.HSet is dropped unread, and the function returns no error`
	return nil
}

// UpdateChecked returns the HSET's error: not reported.
func (b *Books) UpdateChecked(msg *message.Message) error {
	return b.rdb.HSet(context.Background(), "book:"+msg.UUID, "bids", string(msg.Payload)).Err()
}

// Cache sets a key with a TTL, a cache the next read repairs: its dropped
// result is not reported.
func (b *Books) Cache(msg *message.Message) error {
	b.rdb.Set(context.Background(), "last:"+msg.UUID, string(msg.Payload), time.Minute)
	return nil
}
