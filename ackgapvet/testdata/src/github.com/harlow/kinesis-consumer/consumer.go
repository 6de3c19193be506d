// Package consumer is a stub of harlow/kinesis-consumer.
package consumer

import (
	"context"
	"errors"
)

// Record is a stub of a Kinesis record with its shard.
type Record struct {
	Data    []byte
	ShardID string
}

// ScanFunc is called once per record; nil checkpoints it.
type ScanFunc func(*Record) error

// ErrSkipCheckpoint goes on without checkpointing the record.
var ErrSkipCheckpoint = errors.New("skip checkpoint")

// Consumer is a stub.
type Consumer struct{}

// New is a stub.
func New(stream string) (*Consumer, error) { return &Consumer{}, nil }

// Scan is a stub.
func (c *Consumer) Scan(ctx context.Context, fn ScanFunc) error { return nil }

// ScanShard is a stub.
func (c *Consumer) ScanShard(ctx context.Context, shard string, fn ScanFunc) error { return nil }
