// Package events is a stub of aws-lambda-go's events.
package events

type SQSMessage struct{ MessageId, ReceiptHandle, Body string }
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

// S3Event is a stub of the S3 notification event.
type S3Event struct{ Records []S3EventRecord }

// S3EventRecord is a stub.
type S3EventRecord struct{ Key string }

// DynamoDBEvent is a stub of the DynamoDB Streams event.
type DynamoDBEvent struct{ Records []DynamoDBEventRecord }

// DynamoDBEventRecord is a stub.
type DynamoDBEventRecord struct{ EventID string }

// KinesisBatchItemFailure is a stub.
type KinesisBatchItemFailure struct{ ItemIdentifier string }

// KinesisEventResponse is a stub of the partial batch response of a stream.
type KinesisEventResponse struct{ BatchItemFailures []KinesisBatchItemFailure }

// DynamoDBBatchItemFailure is a stub.
type DynamoDBBatchItemFailure struct{ ItemIdentifier string }

// DynamoDBEventResponse is a stub of the partial batch response of a stream.
type DynamoDBEventResponse struct{ BatchItemFailures []DynamoDBBatchItemFailure }
