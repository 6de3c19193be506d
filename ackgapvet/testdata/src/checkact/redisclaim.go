package checkact

import (
	"context"
	"database/sql"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

// karma claims each vote in Redis, then updates PostgreSQL (wave 14,
// redyx's vote consumer): a failed update leaves the claim, and the
// redelivery skips the vote.
func karma(ctx context.Context, r *kafka.Reader, rdb *redis.Client, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		added, err := rdb.SAdd(ctx, "votes:seen", string(m.Value)).Result() // want `claims the message in Redis \(redis.Client.SAdd\) before its work \(a database write \(sql.DB.ExecContext\), line \d+\)`
		if err != nil {
			continue
		}
		if added == 0 {
			_ = r.CommitMessages(ctx, m)
			continue
		}
		if _, err := db.ExecContext(ctx, "UPDATE profiles SET karma = karma + 1 WHERE id = $1", string(m.Value)); err != nil {
			continue
		}
		_ = r.CommitMessages(ctx, m)
	}
}

// karmaReleased gives the claim back when the update fails: clean.
func karmaReleased(ctx context.Context, r *kafka.Reader, rdb *redis.Client, db *sql.DB) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if !rdb.SetNX(ctx, "vote:"+string(m.Value), 1, 24*time.Hour).Val() {
			_ = r.CommitMessages(ctx, m)
			continue
		}
		if _, err := db.ExecContext(ctx, "UPDATE profiles SET karma = karma + 1 WHERE id = $1", string(m.Value)); err != nil {
			rdb.Del(ctx, "vote:"+string(m.Value))
			return
		}
		_ = r.CommitMessages(ctx, m)
	}
}
