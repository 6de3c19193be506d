// Package redisclaim reads a Redis stream's new entries and, on a timer,
// reclaims the group's entries left pending by a crashed consumer: no
// entry is stranded (the twin of redislist.Events).
package redisclaim

import (
	"context"
	"database/sql"
	"time"

	"github.com/redis/go-redis/v9"
)

// Entries applies each entry and acks it after its update.
func Entries(ctx context.Context, rdb *redis.Client, db *sql.DB) {
	for ctx.Err() == nil {
		streams, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"events", ">"}}).Result()
		if err != nil {
			continue
		}
		for _, s := range streams {
			for _, m := range s.Messages {
				if _, err := db.ExecContext(ctx, "UPDATE flags SET value = $1 WHERE id = $2", m.Values["v"], m.ID); err != nil {
					continue
				}
				rdb.XAck(ctx, "events", "g", m.ID)
			}
		}
	}
}

// Reclaim takes over entries pending for more than a minute, so the loop's
// next read sees them again.
func Reclaim(ctx context.Context, rdb *redis.Client) error {
	_, _, err := rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: "events", Group: "g", Consumer: "c", Start: "0", MinIdle: time.Minute}).Result()
	return err
}
