package sqsbroker

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	wsqs "github.com/ThreeDotsLabs/watermill-aws/sqs"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ackgap/ackgap"
)

// Metadata keys the [Marshaler] sets on every received message. They
// describe one delivery, not the event: the Marshaler never writes them
// back as attributes, so a copy republished (to a dead-letter queue, say)
// does not carry a stale receipt handle.
const (
	// MetadataReceiptHandle is the SQS receipt handle of this delivery.
	// Each delivery of a message has a new one; only the newest deletes
	// the message.
	MetadataReceiptHandle = "sqs_receipt_handle"
	// MetadataReceiveCount is the ApproximateReceiveCount system
	// attribute: 1 on the first delivery, 2 on the second, and so on.
	MetadataReceiveCount = "sqs_receive_count"
	// MetadataMessageID is the SQS MessageId. It is assigned by SQS per
	// SendMessage, so two sends of one event (a producer's retry, an outbox
	// relay's republish) have different MessageIds: it is never the dedupe
	// key (docs/design.md invariant 5), only metadata for logs and traces.
	MetadataMessageID = "sqs_message_id"
)

// AttributeBodyEncoding is the message attribute the [Marshaler] sets to
// "base64" when it had to encode the payload: an SQS body may only hold
// the characters #x9, #xA, #xD, #x20-#xD7FF, #xE000-#xFFFD and
// #x10000-#x10FFFF (SendMessage API reference), so arbitrary bytes (a
// payload that failed to parse, on its way to a dead-letter queue) would
// be rejected with InvalidMessageContents. The Unmarshaler decodes it and
// drops the attribute.
const AttributeBodyEncoding = "ackgap_body_encoding"

// MaxMessageAttributes is SQS's limit on message attributes per message.
const MaxMessageAttributes = 10

// Marshaler converts between Watermill messages and SQS messages. It
// implements watermill-aws's sqs.Marshaler (for the publisher) and
// sqs.Unmarshaler (for the subscriber and the Lambda adapter). The zero
// value is ready to use and safe for concurrent use.
//
// Marshal writes every metadata key with a non-empty value as a String
// message attribute (event_id, traceparent, the dead-letter reason),
// except the delivery keys (MetadataReceiptHandle, MetadataReceiveCount,
// MetadataMessageID). A value holding characters SQS refuses in a String
// attribute (bytes that are not UTF-8, control characters: see the body
// rule at [AttributeBodyEncoding]) is written as a Binary attribute with
// the same bytes, so whatever Unmarshal read (a Binary attribute is read
// as raw bytes) is written back unchanged, to a dead-letter queue say.
// The Watermill UUID travels in watermill-aws's attribute
// "_watermill_message_uuid" when there is room for it within SQS's 10
// attributes. It returns an error wrapping ackgap.ErrUnencodable, and
// sends nothing, when the metadata needs more than 10 attributes, or a key
// is not a valid SQS attribute name.
//
// Unmarshal turns every message attribute into metadata (String and
// Number values as they are, Binary values as raw bytes), takes the
// Watermill UUID from "_watermill_message_uuid" (or the MessageId for
// messages from other producers), decodes a base64 body marked with
// AttributeBodyEncoding, and adds the delivery keys. A delivery key
// overrides an attribute of the same name.
type Marshaler struct{}

var (
	_ wsqs.Marshaler   = Marshaler{}
	_ wsqs.Unmarshaler = Marshaler{}
)

// deliveryKeys are set by Unmarshal and never marshalled.
var deliveryKeys = map[string]bool{MetadataReceiptHandle: true, MetadataReceiveCount: true, MetadataMessageID: true}

// Marshal implements watermill-aws's sqs.Marshaler.
func (Marshaler) Marshal(msg *message.Message) (*types.Message, error) {
	attrs := make(map[string]types.MessageAttributeValue, len(msg.Metadata)+2)
	var errs []error
	keys := make([]string, 0, len(msg.Metadata))
	for k := range msg.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := msg.Metadata[k]
		if deliveryKeys[k] || v == "" {
			// An empty value reads the same as a missing key
			// (Metadata.Get), and SQS refuses empty attribute values.
			continue
		}
		if err := validAttributeName(k); err != nil {
			errs = append(errs, err)
			continue
		}
		if !validSQSText(v) {
			attrs[k] = types.MessageAttributeValue{DataType: aws.String(wsqs.AWSBinaryDataType), BinaryValue: []byte(v)}
			continue
		}
		attrs[k] = stringAttribute(v)
	}
	body := string(msg.Payload)
	if !validSQSText(body) {
		body = base64.StdEncoding.EncodeToString(msg.Payload)
		attrs[AttributeBodyEncoding] = stringAttribute("base64")
	}
	if len(attrs) > MaxMessageAttributes {
		errs = append(errs, fmt.Errorf("metadata needs %d message attributes, SQS allows %d: %s",
			len(attrs), MaxMessageAttributes, strings.Join(sortedKeys(attrs), ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sqsbroker: marshal message %s: %w: %w", msg.UUID, ackgap.ErrUnencodable, err)
	}
	if msg.UUID != "" && len(attrs) < MaxMessageAttributes {
		attrs[wsqs.UUIDAttribute] = stringAttribute(msg.UUID)
	}
	return &types.Message{Body: aws.String(body), MessageAttributes: attrs}, nil
}

// Unmarshal implements watermill-aws's sqs.Unmarshaler. It returns an
// error only for a body marked base64 that does not decode.
func (Marshaler) Unmarshal(m *types.Message) (*message.Message, error) {
	md := make(message.Metadata, len(m.MessageAttributes)+3)
	for k, a := range m.MessageAttributes {
		dataType := aws.ToString(a.DataType)
		// Custom types extend a base type: "Number.int", "String.json".
		if i := strings.IndexByte(dataType, '.'); i >= 0 {
			dataType = dataType[:i]
		}
		switch dataType {
		case wsqs.AWSStringDataType, wsqs.AWSNumberDataType:
			if a.StringValue != nil {
				md[k] = *a.StringValue
			}
		case wsqs.AWSBinaryDataType:
			md[k] = string(a.BinaryValue)
		}
	}
	uuid := md[wsqs.UUIDAttribute]
	delete(md, wsqs.UUIDAttribute)
	if uuid == "" {
		uuid = aws.ToString(m.MessageId)
	}
	payload := []byte(aws.ToString(m.Body))
	if enc := md[AttributeBodyEncoding]; enc != "" {
		if enc != "base64" {
			return nil, fmt.Errorf("sqsbroker: message %s: unknown %s %q", aws.ToString(m.MessageId), AttributeBodyEncoding, enc)
		}
		dec, err := base64.StdEncoding.DecodeString(string(payload))
		if err != nil {
			return nil, fmt.Errorf("sqsbroker: message %s: body marked base64 does not decode: %w", aws.ToString(m.MessageId), err)
		}
		payload = dec
		delete(md, AttributeBodyEncoding)
	}
	if m.MessageId != nil {
		md[MetadataMessageID] = *m.MessageId
	}
	if m.ReceiptHandle != nil {
		md[MetadataReceiptHandle] = *m.ReceiptHandle
	}
	if n, ok := m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; ok {
		md[MetadataReceiveCount] = n
	}
	msg := message.NewMessage(uuid, payload)
	msg.Metadata = md
	return msg, nil
}

func stringAttribute(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String(wsqs.AWSStringDataType), StringValue: aws.String(v)}
}

func sortedKeys(m map[string]types.MessageAttributeValue) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validAttributeName applies SQS's rules for message attribute names
// (SQS developer guide, "Amazon SQS message attributes"): up to 256
// characters, letters, digits, '_', '-' and '.'; no leading or trailing
// '.', no "..", no "AWS." or "Amazon." prefix in any case.
func validAttributeName(k string) error {
	bad := func(why string) error {
		return fmt.Errorf("metadata key %q is not a valid SQS attribute name: %s", k, why)
	}
	if k == "" || len(k) > 256 {
		return bad("it must be 1 to 256 characters long")
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return bad("only letters, digits, '_', '-' and '.' are allowed")
		}
	}
	if strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, "..") {
		return bad("'.' may not start or end it or repeat")
	}
	if l := strings.ToLower(k); strings.HasPrefix(l, "aws.") || strings.HasPrefix(l, "amazon.") {
		return bad(`the "AWS." and "Amazon." prefixes are reserved`)
	}
	return nil
}

// validSQSText reports whether s is valid UTF-8 made of the characters SQS
// accepts in a message body or String attribute.
func validSQSText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == 0x9 || r == 0xA || r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}
