// Package redislist takes messages from Redis with go-redis: a reliable list
// queue (BLMOVE into a processing list, LREM as the ack), a stream read by a
// consumer group (XREADGROUP, XACK) and a Pub/Sub channel (field trial,
// wave 39: heimdall's syncer and data plane).
package redislist

import (
	"context"
	"database/sql"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
)

// Updates applies each update and removes it from the processing list even
// when the update failed.
func Updates(ctx context.Context, rdb *redis.Client, db *sql.DB) {
	for ctx.Err() == nil {
		m, err := rdb.BLMove(ctx, "updates", "processing", "RIGHT", "LEFT", 5*time.Second).Result()
		if err != nil {
			continue
		}
		if _, err := db.ExecContext(ctx, "UPDATE flags SET value = $1", m); err != nil {
			log.Printf("update: %v", err)
		}
		rdb.LRem(ctx, "processing", 1, m)
	}
}

// Events acks each stream entry after its update; a failed one stays
// pending for the group.
func Events(ctx context.Context, rdb *redis.Client, db *sql.DB) {
	for ctx.Err() == nil {
		streams, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"events", ">"}}).Result()
		if err != nil {
			continue
		}
		for _, s := range streams {
			for _, m := range s.Messages {
				if _, err := db.ExecContext(ctx, "UPDATE counters SET n = n + 1 WHERE id = $1", m.ID); err != nil {
					continue
				}
				rdb.XAck(ctx, "events", "g", m.ID)
			}
		}
	}
}

// UpdatesEarly removes each update from the processing list, checking the
// reply, before it applies it.
func UpdatesEarly(ctx context.Context, rdb *redis.Client, db *sql.DB) {
	for ctx.Err() == nil {
		m, err := rdb.BLMove(ctx, "updates", "processing", "RIGHT", "LEFT", 5*time.Second).Result()
		if err != nil {
			continue
		}
		if err := rdb.LRem(ctx, "processing", 1, m).Err(); err != nil {
			continue
		}
		_, _ = db.ExecContext(ctx, "UPDATE flags SET value = $1", m)
	}
}

// Watch stores each flag change it hears.
func Watch(ctx context.Context, rdb *redis.Client, db *sql.DB) {
	for m := range rdb.Subscribe(ctx, "flags").Channel() {
		if _, err := db.ExecContext(ctx, "UPDATE flags SET value = $1 WHERE name = $2", m.Payload, m.Channel); err != nil {
			log.Printf("flag: %v", err)
		}
	}
}
