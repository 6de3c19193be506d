// Package kgo is a stub of franz-go's kgo.
package kgo

import "context"

type Opt interface{}
type Record struct{ Value []byte }
type Fetches []Record

func (f Fetches) EachRecord(fn func(*Record)) {}

// Records returns every record of the fetches.
func (f Fetches) Records() []*Record { return nil }

type Client struct{}

func NewClient(opts ...Opt) (*Client, error)                              { return &Client{}, nil }
func ConsumerGroup(g string) Opt                                          { return nil }
func ConsumeTopics(t ...string) Opt                                       { return nil }
func DisableAutoCommit() Opt                                              { return nil }
func (c *Client) PollFetches(ctx context.Context) Fetches                 { return nil }
func (c *Client) CommitRecords(ctx context.Context, rs ...*Record) error  { return nil }
func (c *Client) ProduceSync(ctx context.Context, rs ...*Record) struct{} { return struct{}{} }
func SeedBrokers(b ...string) Opt                                         { return nil }
func AutoCommitMarks() Opt                                                { return nil }
func AutoCommitGreedy() Opt                                               { return nil }

func BlockRebalanceOnPoll() Opt   { return nil }
func (c *Client) AllowRebalance() {}

// FetchPartition is one partition's part of a fetch.
type FetchPartition struct {
	Partition int32
	Err       error
	Records   []*Record
}

// FetchTopicPartition is a FetchPartition with its topic.
type FetchTopicPartition struct {
	Topic string
	FetchPartition
}

// EachPartition calls fn for each partition of the fetches.
func (f Fetches) EachPartition(fn func(FetchTopicPartition)) {}

// FetchError is one partition's fetch error.
type FetchError struct {
	Topic     string
	Partition int32
	Err       error
}

// Err returns the first error of the fetches, or nil.
func (f Fetches) Err() error { return nil }

// Errors returns every partition's error of the fetches.
func (f Fetches) Errors() []FetchError { return nil }

// Err0 returns the error of a fetch with one partition.
func (f Fetches) Err0() error { return nil }

// IsClientClosed reports whether the fetches say the client is closed.
func (f Fetches) IsClientClosed() bool { return false }

// EachError calls fn for each partition's error.
func (f Fetches) EachError(fn func(string, int32, error)) {}

// CommitUncommittedOffsets commits what the polls returned.
func (c *Client) CommitUncommittedOffsets(ctx context.Context) error { return nil }
