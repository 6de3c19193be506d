package sqsbroker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsqs "github.com/ThreeDotsLabs/watermill-aws/sqs"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ackgap/ackgap"
)

// LambdaDeadlineMarginDefault is the default LambdaConfig.DeadlineMargin.
const LambdaDeadlineMarginDefault = time.Second

// LambdaHandlerFunc is the signature of a Lambda function fed by an SQS
// event source mapping with ReportBatchItemFailures: pass it to
// lambda.Start (github.com/aws/aws-lambda-go/lambda).
type LambdaHandlerFunc func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// LambdaConfig configures [LambdaHandler]. Fields left zero take the
// default named in their doc; nil means all defaults.
type LambdaConfig struct {
	// Unmarshaler turns each record into a Watermill message. Default
	// [Marshaler]: message attributes (event_id, traceparent) become
	// metadata, with MetadataMessageID, MetadataReceiptHandle and
	// MetadataReceiveCount from the record.
	Unmarshaler wsqs.Unmarshaler
	// DeadlineMargin: a record is not started when the invocation's
	// deadline is closer than this; it is reported failed, unprocessed, so
	// SQS delivers it again instead of Lambda killing the function in the
	// middle of its transaction. Default LambdaDeadlineMarginDefault (1 s);
	// must not be negative.
	DeadlineMargin time.Duration
	// Logger receives one line per failed record. Default
	// watermill.NopLogger.
	Logger watermill.LoggerAdapter
}

// WithDefaults returns a copy of c with every zero field set to its
// default.
func (c LambdaConfig) WithDefaults() LambdaConfig {
	if c.Unmarshaler == nil {
		c.Unmarshaler = Marshaler{}
	}
	if c.DeadlineMargin == 0 {
		c.DeadlineMargin = LambdaDeadlineMarginDefault
	}
	if c.Logger == nil {
		c.Logger = watermill.NopLogger{}
	}
	return c
}

// lambdaConfig returns cfg with defaults (nil: all defaults), or an error
// wrapping "invalid config" that names every problem: missing (a nil
// handler or processor, when not nil) and bad fields.
func lambdaConfig(cfg *LambdaConfig, missing error) (LambdaConfig, error) {
	var c LambdaConfig
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	errs := []error{missing}
	if c.DeadlineMargin < 0 {
		errs = append(errs, fmt.Errorf("DeadlineMargin is %s, must not be negative", c.DeadlineMargin))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid config: %w", err)
	}
	return c, nil
}

// LambdaHandler returns a Lambda handler that runs each record of an SQS
// event through h, in order, and answers with a partial batch response:
// BatchItemFailures lists exactly the records whose h returned an error
// or panicked, by MessageId (AWS Lambda developer guide, "Handling errors
// for an SQS event source in Lambda"; the event source mapping needs
// FunctionResponseTypes ["ReportBatchItemFailures"]). Lambda deletes the
// other records; the failed ones return after the queue's visibility
// timeout and go to its dead-letter queue after maxReceiveCount receives.
// The handler itself never returns an error: that would make Lambda retry
// the whole batch, successes included.
//
// Build h with router.Router.Chain to get the router's safe chain: the inbox
// (the event id comes from the record's "event_id" message attribute),
// retries in place, and the dead-letter path. With that chain an
// ordinary error is retried Config.MaxAttempts times in place and then
// dead-lettered, which counts as success here; what reaches
// BatchItemFailures is what the router does not dead-letter: a store that
// is unavailable, a cancelled context, a failed dead-letter publish. A
// whole batch delivered again (a function error, a timeout, a mapping
// without ReportBatchItemFailures) finds the successful records in the
// inbox and skips them as duplicates (case S12).
//
// On a FIFO queue (event source ARN ending in ".fifo") the first failure
// stops the batch: the records after it are reported failed without being
// run, so that no message overtakes an earlier one of its group (the
// guide's rule for FIFO partial batch responses). A record whose
// MessageId is empty cannot be named; it fails the whole batch by
// returning an error, so Lambda retries it rather than deleting it.
func LambdaHandler(h message.HandlerFunc, cfg *LambdaConfig) (LambdaHandlerFunc, error) {
	var missing error
	if h == nil {
		missing = errors.New("handler is nil")
	}
	c, err := lambdaConfig(cfg, missing)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		failed := false
		for i := range ev.Records {
			rec := &ev.Records[i]
			if rec.MessageId == "" {
				return resp, fmt.Errorf("sqsbroker: record %d has no messageId: cannot report it as a batch item failure", i)
			}
			fifo := strings.HasSuffix(rec.EventSourceARN, ".fifo")
			var err error
			switch {
			case failed && fifo:
				err = errors.New("not run: an earlier record of this FIFO batch failed")
			case tooLate(ctx, c.DeadlineMargin):
				err = fmt.Errorf("not run: the invocation's deadline is less than %s away", c.DeadlineMargin)
			default:
				err = runRecord(ctx, h, c.Unmarshaler, rec)
			}
			if err != nil {
				failed = true
				c.Logger.Info("SQS record failed; reported in batchItemFailures", watermill.LogFields{
					"sqs_message_id": rec.MessageId, "error": err.Error(),
				})
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			}
		}
		return resp, nil
	}, nil
}

func tooLate(ctx context.Context, margin time.Duration) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && time.Until(d) < margin
}

// runRecord runs one record through h; a panic is an error.
func runRecord(ctx context.Context, h message.HandlerFunc, u wsqs.Unmarshaler, rec *events.SQSMessage) (err error) {
	msg, err := u.Unmarshal(recordMessage(rec))
	if err != nil {
		return err
	}
	// Lambda deletes the records it is not told about after the function
	// returns: the adapter cannot see that confirmation.
	n, _ := strconv.Atoi(rec.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	msg.SetContext(ackgap.WithDelivery(ctx, &ackgap.Delivery{
		MessageID: rec.MessageId, ReceiveCount: n, Confirmation: ackgap.ConfirmationUnobserved,
	}))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqsbroker: handler panicked: %v", p)
		}
	}()
	produced, err := h(msg)
	if err != nil {
		return err
	}
	if len(produced) > 0 {
		// Watermill's router nacks these too without a publisher
		// (message.ErrOutputInNoPublisherHandler): nothing would send them.
		return fmt.Errorf("sqsbroker: handler produced %d messages and a Lambda handler has no publisher for them: %w",
			len(produced), message.ErrOutputInNoPublisherHandler)
	}
	return nil
}

// recordMessage converts a Lambda SQS record into the SDK's message
// type, so one Unmarshaler serves both paths.
func recordMessage(rec *events.SQSMessage) *types.Message {
	attrs := make(map[string]types.MessageAttributeValue, len(rec.MessageAttributes))
	for k, a := range rec.MessageAttributes {
		attrs[k] = types.MessageAttributeValue{
			DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue,
			StringListValues: a.StringListValues, BinaryListValues: a.BinaryListValues,
		}
	}
	return &types.Message{
		MessageId:              aws.String(rec.MessageId),
		ReceiptHandle:          aws.String(rec.ReceiptHandle),
		Body:                   aws.String(rec.Body),
		MD5OfBody:              aws.String(rec.Md5OfBody),
		MD5OfMessageAttributes: aws.String(rec.Md5OfMessageAttributes),
		Attributes:             rec.Attributes,
		MessageAttributes:      attrs,
	}
}
