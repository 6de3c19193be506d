// Package dynamodbstreams is a stub of aws-sdk-go-v2's DynamoDB Streams
// client.
package dynamodbstreams

import "context"

// Options is a stub.
type Options struct{}

// Client is a stub.
type Client struct{}

// Record is a stub of types.Record.
type Record struct {
	EventID   *string
	EventName string
}

// GetRecordsInput is a stub.
type GetRecordsInput struct{ ShardIterator *string }

// GetRecordsOutput is a stub.
type GetRecordsOutput struct {
	Records           []Record
	NextShardIterator *string
}

// GetRecords is a stub.
func (c *Client) GetRecords(ctx context.Context, in *GetRecordsInput, opts ...func(*Options)) (*GetRecordsOutput, error) {
	return &GetRecordsOutput{}, nil
}
