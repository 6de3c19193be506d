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

// StringCmd holds a string reply.
type StringCmd struct{}

// Result returns the reply.
func (c *StringCmd) Result() (string, error) { return "", nil }

// StringSliceCmd holds a list reply.
type StringSliceCmd struct{}

// Result returns the reply.
func (c *StringSliceCmd) Result() ([]string, error) { return nil, nil }

// BLMove moves an element from source to destination, blocking.
func (c *Client) BLMove(ctx context.Context, source, destination, srcpos, destpos string, timeout time.Duration) *StringCmd {
	return &StringCmd{}
}

// BRPopLPush pops from source and pushes to destination, blocking.
func (c *Client) BRPopLPush(ctx context.Context, source, destination string, timeout time.Duration) *StringCmd {
	return &StringCmd{}
}

// BLPop pops from the first non-empty list, blocking.
func (c *Client) BLPop(ctx context.Context, timeout time.Duration, keys ...string) *StringSliceCmd {
	return &StringSliceCmd{}
}

// LRem removes count occurrences of value from a list.
func (c *Client) LRem(ctx context.Context, key string, count int64, value any) *IntCmd {
	return &IntCmd{}
}

// XMessage is a stream entry.
type XMessage struct {
	ID     string
	Values map[string]any
}

// XStream is a stream's entries.
type XStream struct {
	Stream   string
	Messages []XMessage
}

// XStreamSliceCmd holds XREAD's reply.
type XStreamSliceCmd struct{}

// Result returns the reply.
func (c *XStreamSliceCmd) Result() ([]XStream, error) { return nil, nil }

// XReadGroupArgs are XREADGROUP's arguments.
type XReadGroupArgs struct {
	Group, Consumer string
	Streams         []string
	Count           int64
	Block           time.Duration
}

// XReadGroup reads entries for a consumer group.
func (c *Client) XReadGroup(ctx context.Context, a *XReadGroupArgs) *XStreamSliceCmd {
	return &XStreamSliceCmd{}
}

// XAutoClaimArgs are XAUTOCLAIM's arguments.
type XAutoClaimArgs struct {
	Stream, Group, Consumer, Start string
	MinIdle                        time.Duration
}

// XAutoClaimCmd holds XAUTOCLAIM's reply.
type XAutoClaimCmd struct{}

// Result returns the claimed entries and the next start.
func (c *XAutoClaimCmd) Result() ([]XMessage, string, error) { return nil, "", nil }

// XAutoClaim takes over a group's entries pending longer than MinIdle.
func (c *Client) XAutoClaim(ctx context.Context, a *XAutoClaimArgs) *XAutoClaimCmd {
	return &XAutoClaimCmd{}
}

// XAck acks entries of a consumer group.
func (c *Client) XAck(ctx context.Context, stream, group string, ids ...string) *IntCmd {
	return &IntCmd{}
}

// Message is a Pub/Sub message.
type Message struct {
	Channel string
	Payload string
}

// PubSub is a subscription.
type PubSub struct{}

// Subscribe subscribes to channels.
func (c *Client) Subscribe(ctx context.Context, channels ...string) *PubSub { return &PubSub{} }

// Channel returns the subscription's messages.
func (ps *PubSub) Channel() <-chan *Message { return nil }

// ReceiveMessage waits for a message.
func (ps *PubSub) ReceiveMessage(ctx context.Context) (*Message, error) { return nil, nil }

// Cmd holds a generic reply.
type Cmd struct{}

// Err returns the command's error.
func (c *Cmd) Err() error { return nil }

// EvalSha runs a loaded Lua script.
func (c *Client) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *Cmd {
	return &Cmd{}
}

// LPush pushes values onto the head of a list.
func (c *Client) LPush(ctx context.Context, key string, values ...any) *IntCmd { return &IntCmd{} }

// RPush pushes values onto the tail of a list.
func (c *Client) RPush(ctx context.Context, key string, values ...any) *IntCmd { return &IntCmd{} }

// BRPop pops from the tail of the first non-empty list, blocking.
func (c *Client) BRPop(ctx context.Context, timeout time.Duration, keys ...string) *StringSliceCmd {
	return &StringSliceCmd{}
}

// Err returns the command's error.
func (c *StringCmd) Err() error { return nil }
