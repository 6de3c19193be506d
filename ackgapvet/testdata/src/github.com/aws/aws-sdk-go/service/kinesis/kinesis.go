// Package kinesis is a stub of aws-sdk-go v1's Kinesis client.
package kinesis

import "context"

// Record is a stub.
type Record struct {
	Data           []byte
	SequenceNumber *string
}

// GetRecordsInput is a stub.
type GetRecordsInput struct{ ShardIterator *string }

// GetRecordsOutput is a stub.
type GetRecordsOutput struct {
	Records           []*Record
	NextShardIterator *string
}

// Kinesis is a stub of the v1 client.
type Kinesis struct{}

// GetRecordsWithContext is a stub.
func (k *Kinesis) GetRecordsWithContext(ctx context.Context, in *GetRecordsInput) (*GetRecordsOutput, error) {
	return &GetRecordsOutput{}, nil
}
