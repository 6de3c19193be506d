// Package events is a stub of aws-lambda-go's events.
package events

type SQSMessage struct{ MessageId, Body string }
type SQSEvent struct{ Records []SQSMessage }
type SQSBatchItemFailure struct{ ItemIdentifier string }
type SQSEventResponse struct{ BatchItemFailures []SQSBatchItemFailure }
