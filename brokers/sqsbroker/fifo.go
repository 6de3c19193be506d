package sqsbroker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	wsqs "github.com/ThreeDotsLabs/watermill-aws/sqs"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ackgap/ackgap"
)

// MetadataPartitionKey is the Watermill metadata key whose value the
// publisher sends as the MessageGroupId of a message to a FIFO queue:
// the messages of one group are delivered in the order they were sent,
// one group at a time. It is the key kafkabroker reads for the Kafka
// record key ("partition_key"), so one event carries its ordering key to
// either broker, and outbox rows carry it as a header
// (ackgap.OutboxEntry.Headers) through outbox.Publish.
const MetadataPartitionKey = "partition_key"

// ErrMissingGroupKey is wrapped by the error a FIFO publish returns for a
// message without a group key (metadata MetadataPartitionKey): SQS
// requires a MessageGroupId on a FIFO queue, and ackgap refuses to make
// one up, since a made-up group would deliver the message unordered with
// its real group. Nothing is sent. The error is an ackgap.Permanent with
// reason ReasonMissingGroupKey: an outbox row without one is dead at once
// (outbox.Publish), redrivable once the writer is fixed and the row's
// header set; a router handler's publish fails the message the same way.
var ErrMissingGroupKey = errors.New("message to a FIFO queue has no group key (metadata \"" + MetadataPartitionKey + "\")")

// ReasonMissingGroupKey is the permanent-failure reason of
// [ErrMissingGroupKey].
const ReasonMissingGroupKey = "sqs_fifo_no_group"

// fifoIDMaxLen is the longest MessageGroupId and MessageDeduplicationId
// SQS accepts (SendMessage API reference: up to 128 characters,
// alphanumeric and punctuation).
const fifoIDMaxLen = 128

// isFIFOURL reports whether a queue URL or name names a FIFO queue (SQS
// requires the ".fifo" suffix on their names).
func isFIFOURL(url string) bool { return strings.HasSuffix(url, ".fifo") }

// fifoID returns v when SQS accepts it as a MessageGroupId or
// MessageDeduplicationId, else its SHA-256 in hex (64 characters): the
// same value always maps to the same id, so order and dedupe hold.
func fifoID(v string) string {
	ok := len(v) > 0 && len(v) <= fifoIDMaxLen
	for i := 0; ok && i < len(v); i++ {
		c := v[i]
		ok = c > ' ' && c < 0x7f // ASCII letters, digits and punctuation
	}
	if ok {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}

// attrValue is the text of a String or Binary message attribute.
func attrValue(attrs map[string]types.MessageAttributeValue, k string) string {
	a, ok := attrs[k]
	if !ok {
		return ""
	}
	if a.StringValue != nil {
		return *a.StringValue
	}
	return string(a.BinaryValue)
}

// sendMessageInput builds SendMessage's input; for a FIFO queue (URL
// ending in ".fifo") it sets MessageGroupId from the partition key and
// MessageDeduplicationId from the event id (see [NewPublisher]).
func sendMessageInput(_ context.Context, queueURL wsqs.QueueURL, msg *types.Message) (*sqs.SendMessageInput, error) {
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(string(queueURL)),
		MessageAttributes: msg.MessageAttributes,
		MessageBody:       msg.Body,
	}
	if !isFIFOURL(string(queueURL)) {
		return in, nil
	}
	group, dedupe, err := fifoIDs(msg.MessageAttributes)
	if err != nil {
		return nil, err
	}
	in.MessageGroupId, in.MessageDeduplicationId = aws.String(group), aws.String(dedupe)
	return in, nil
}

// fifoIDs returns the MessageGroupId and MessageDeduplicationId of a
// message to a FIFO queue, from its attributes.
func fifoIDs(attrs map[string]types.MessageAttributeValue) (group, dedupe string, err error) {
	dedupe = attrValue(attrs, ackgap.MetadataEventIDKey)
	if dedupe == "" {
		dedupe = attrValue(attrs, wsqs.UUIDAttribute)
	}
	group = attrValue(attrs, MetadataPartitionKey)
	if group == "" && attrValue(attrs, ackgap.MetadataDeadLetterReason) != "" {
		// A dead-lettered copy keeps no order worth keeping: its own group.
		group = dedupe
	}
	if group == "" {
		return "", "", ackgap.Permanent(ReasonMissingGroupKey, fmt.Errorf("sqsbroker: %w", ErrMissingGroupKey))
	}
	if dedupe == "" {
		return "", "", ackgap.Permanent(ackgap.ReasonMissingEventID, fmt.Errorf("sqsbroker: FIFO message has no event id for its MessageDeduplicationId: %w", ackgap.ErrMissingEventID))
	}
	return fifoID(group), fifoID(dedupe), nil
}
