// Package redis is a stub of go-zero's core/stores/redis.
package redis

import "context"

// Redis is go-zero's Redis client.
type Redis struct{}

// HincrbyCtx is HINCRBY.
func (r *Redis) HincrbyCtx(ctx context.Context, key, field string, increment int) (int, error) {
	return 0, nil
}

// SaddCtx is SADD.
func (r *Redis) SaddCtx(ctx context.Context, key string, values ...any) (int, error) {
	return 0, nil
}
