// Package events is a stub of aws-lambda-go's events.
package events

type SQSMessage struct{ MessageId, Body string }
type SQSEvent struct{ Records []SQSMessage }
type SQSBatchItemFailure struct{ ItemIdentifier string }
type SQSEventResponse struct{ BatchItemFailures []SQSBatchItemFailure }

type KinesisRecord struct{ Data []byte }
type KinesisEventRecord struct {
	EventID string
	Kinesis KinesisRecord
}
type KinesisEvent struct{ Records []KinesisEventRecord }
type KafkaRecord struct{ Value string }
type KafkaEvent struct{ Records map[string][]KafkaRecord }
