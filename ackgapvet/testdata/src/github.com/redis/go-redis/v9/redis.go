// Package redis is a stub of go-redis v9: only the names the checker reads.
package redis

import (
	"context"
	"time"
)

// Client is a Redis client.
type Client struct{}

// IntCmd holds an integer reply.
type IntCmd struct{}

// Result returns the reply.
func (c *IntCmd) Result() (int64, error) { return 0, nil }

// Val returns the reply.
func (c *IntCmd) Val() int64 { return 0 }

// BoolCmd holds a boolean reply.
type BoolCmd struct{}

// Result returns the reply.
func (c *BoolCmd) Result() (bool, error) { return false, nil }

// Val returns the reply.
func (c *BoolCmd) Val() bool { return false }

// SAdd adds members to a set; the reply counts the new ones.
func (c *Client) SAdd(ctx context.Context, key string, members ...any) *IntCmd { return &IntCmd{} }

// SRem removes members from a set.
func (c *Client) SRem(ctx context.Context, key string, members ...any) *IntCmd { return &IntCmd{} }

// SetNX sets key if it does not exist.
func (c *Client) SetNX(ctx context.Context, key string, value any, expiration time.Duration) *BoolCmd {
	return &BoolCmd{}
}

// Del deletes keys.
func (c *Client) Del(ctx context.Context, keys ...string) *IntCmd { return &IntCmd{} }

// StatusCmd holds a status reply.
type StatusCmd struct{}

// Err returns the command's error.
func (c *StatusCmd) Err() error { return nil }

// Err returns the command's error.
func (c *IntCmd) Err() error { return nil }

// Z is a sorted-set member.
type Z struct {
	Score  float64
	Member any
}

// ZAdd adds members to a sorted set.
func (c *Client) ZAdd(ctx context.Context, key string, members ...Z) *IntCmd { return &IntCmd{} }

// HSet sets hash fields.
func (c *Client) HSet(ctx context.Context, key string, values ...any) *IntCmd { return &IntCmd{} }

// Set sets key to value; expiration 0 keeps it for ever.
func (c *Client) Set(ctx context.Context, key string, value any, expiration time.Duration) *StatusCmd {
	return &StatusCmd{}
}

// IncrBy adds n to the counter at key.
func (c *Client) IncrBy(ctx context.Context, key string, n int64) *IntCmd { return &IntCmd{} }

// Expire sets key's time to live.
func (c *Client) Expire(ctx context.Context, key string, ttl time.Duration) *BoolCmd {
	return &BoolCmd{}
}

// Err returns the command's error.
func (c *BoolCmd) Err() error { return nil }
