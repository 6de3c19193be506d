// Package interfaces is a stub of vmware-go-kcl's record processor
// interfaces: only the names the checker reads.
package interfaces

// Record is one Kinesis record (the SDK's kinesis.Record).
type Record struct {
	Data           []byte
	SequenceNumber *string
	PartitionKey   *string
}

// IRecordProcessorCheckpointer records a shard's progress.
type IRecordProcessorCheckpointer interface {
	Checkpoint(sequenceNumber *string) error
}

// InitializationInput is given to Initialize.
type InitializationInput struct{ ShardId string }

// ProcessRecordsInput is one batch of a shard's records.
type ProcessRecordsInput struct {
	Records      []*Record
	Checkpointer IRecordProcessorCheckpointer
}

// ShutdownInput is given to Shutdown.
type ShutdownInput struct{ Checkpointer IRecordProcessorCheckpointer }

// IRecordProcessor is what the KCL worker calls.
type IRecordProcessor interface {
	Initialize(input *InitializationInput)
	ProcessRecords(input *ProcessRecordsInput)
	Shutdown(input *ShutdownInput)
}
