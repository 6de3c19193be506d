package idemkey

import (
	"context"
	"database/sql"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// registerGated dedupes in Redis before counting: a SADD whose reply is
// read is a dedupe record (wave 14, redyx's vote consumer); a SADD whose
// reply is dropped is a plain set write and dedupes nothing.
func registerGated(r *message.Router, rdb *redis.Client, db *sql.DB) {
	r.AddNoPublisherHandler("karma", "votes", nil, func(msg *message.Message) error {
		ctx := msg.Context()
		added, err := rdb.SAdd(ctx, "votes:seen", msg.UUID).Result()
		if err != nil || added == 0 {
			return err
		}
		_, err = db.ExecContext(ctx, "UPDATE profiles SET karma = karma + 1 WHERE id = $1", string(msg.Payload))
		return err
	})
	r.AddNoPublisherHandler("followers", "follows", nil, func(msg *message.Message) error {
		ctx := msg.Context()
		rdb.SAdd(context.Background(), "followers", msg.UUID)
		_, err := db.ExecContext(ctx, "UPDATE profiles SET followers = followers + 1 WHERE id = $1", string(msg.Payload)) // want `medium: increments followers with no dedupe record in the same transaction`
		return err
	})
}
