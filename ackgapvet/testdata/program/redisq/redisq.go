// Package redisq records each message as a task in Redis, dropping the
// write's error before the commit (the shape of wave 17's ovh/cds hooks:
// SaveTaskExecution, a sorted-set member, then MarkMessage).
package redisq

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

// Store keeps tasks in Redis.
type Store struct{ rdb *redis.Client }

// SaveTask queues a task: a sorted-set member and its body in a hash,
// stored for ever.
func (s *Store) SaveTask(ctx context.Context, id string, body []byte) error {
	if err := s.rdb.ZAdd(ctx, "tasks", redis.Z{Score: float64(time.Now().Unix()), Member: id}).Err(); err != nil {
		return err
	}
	return s.rdb.HSet(ctx, "task:"+id, "body", body).Err()
}

// Remember caches the last body seen for a minute.
func (s *Store) Remember(ctx context.Context, body []byte) error {
	return s.rdb.Set(ctx, "last", body, time.Minute).Err()
}

// Run drops the task's error, then commits; the cache's is no work.
func Run(ctx context.Context, r *kafka.Reader, s *Store) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		_ = s.Remember(ctx, m.Value)
		s.SaveTask(ctx, string(m.Value), m.Value)
		_ = r.CommitMessages(ctx, m)
	}
}

// Count adds to a follower count with a Lua script, logs a failure and
// commits (field trial, wave 42: fansX's counters, written only by
// scripts).
func Count(ctx context.Context, r *kafka.Reader, rdb *redis.Client, sha string) {
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return
		}
		if err := rdb.EvalSha(ctx, sha, []string{"followers:" + string(m.Value)}, 1).Err(); err != nil {
			log.Printf("count: %v", err)
		}
		_ = r.CommitMessages(ctx, m)
	}
}
