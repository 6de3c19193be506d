package idemkey

import (
	"context"
	"database/sql"

	"github.com/zeromicro/go-queue/kq"
	"github.com/zeromicro/go-zero/core/stores/redis"
)

// likeMq counts likes with go-zero's Redis client, whose commands are
// spelled HincrbyCtx, SaddCtx (wave 33, zfeed H2): a redelivery counts
// again; behind a SADD claim it does not.
type likeMq struct{ rds *redis.Redis }

func (m *likeMq) Consume(ctx context.Context, key, value string) error {
	_, err := m.rds.HincrbyCtx(ctx, "likes:"+value, "count", 1) // want `increments a Redis counter \(redis.Redis.HincrbyCtx\)`
	return err
}

type likeOnceMq struct{ rds *redis.Redis }

func (m *likeOnceMq) Consume(ctx context.Context, key, value string) error {
	if n, err := m.rds.SaddCtx(ctx, "seen-likes", key); err != nil || n == 0 {
		return err
	}
	_, err := m.rds.HincrbyCtx(ctx, "likes:"+value, "count", 1) // clean: behind a claim
	return err
}

// likeInboxMq records the event in an inbox row in a callee first: the
// consumer dedupes, and the counter is not reported as counted again.
type likeInboxMq struct {
	rds *redis.Redis
	db  *sql.DB
}

func (m *likeInboxMq) Consume(ctx context.Context, key, value string) error {
	if err := m.record(ctx, key); err != nil {
		return err
	}
	_, err := m.rds.HincrbyCtx(ctx, "likes:"+value, "count", 1)
	return err
}

func (m *likeInboxMq) record(ctx context.Context, key string) error {
	_, err := m.db.ExecContext(ctx, "INSERT INTO inbox (consumer, event_id) VALUES ('likes', $1) ON CONFLICT DO NOTHING", key)
	return err
}

func startLikes(c kq.KqConf, rds *redis.Redis) {
	kq.MustNewQueue(c, &likeInboxMq{rds: rds}).Start()
	kq.MustNewQueue(c, &likeMq{rds: rds}).Start()
	kq.MustNewQueue(c, &likeOnceMq{rds: rds}).Start()
}
