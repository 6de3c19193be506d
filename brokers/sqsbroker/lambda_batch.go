package sqsbroker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ThreeDotsLabs/watermill"
	wsqs "github.com/ThreeDotsLabs/watermill-aws/sqs"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ackgap/ackgap"
)

// LambdaBatchHandler returns a Lambda handler that runs the records of an
// SQS event through p (a [BatchFunc]) as one batch, in one database transaction (package
// batch), and answers with a partial batch response once the transaction
// committed: BatchItemFailures lists the records whose outcome is failed
// or rejected, by MessageId, and Lambda deletes the others (applied and
// duplicate ones). When the batch as a whole fails (the commit, the
// database), every record is listed: none was committed. The event
// source mapping needs FunctionResponseTypes ["ReportBatchItemFailures"].
//
// Rejected records (no event id, an over-long one, an id reused with
// another payload, a handler's ackgap.Permanent) are listed as failures
// too, with their reason logged: LambdaConfig has no dead-letter
// publisher, so the queue's redrive policy moves them to its dead-letter
// queue after maxReceiveCount receives. A record that does not unmarshal
// is a failure and is not given to p.
//
// A FIFO batch (event source ARN ending in ".fifo") runs as one
// transaction too, with each message group as an ordering key
// (ackgap.Delivery.Key is the MessageGroupId): a group's records are
// applied in rounds, in their order, and a failed record holds back the
// later records of its group (batch.ErrHeldBack), so BatchItemFailures
// lists the failed record and every later one of its group, while the
// other groups commit and are deleted. This is Powertools'
// SqsFifoPartialProcessor with skipGroupOnError; Lambda returns the
// listed records to the queue and SQS delivers the group again from the
// failed record on. A record that does not unmarshal holds back its
// group's later records the same way. The batch does not start when the
// invocation's deadline is closer than cfg.DeadlineMargin: every record
// is listed. A record without a MessageId fails the whole invocation, as
// in [LambdaHandler]. It returns an error wrapping "invalid config" when
// p is nil or cfg is invalid; cfg nil means all defaults.
func LambdaBatchHandler(p BatchFunc, cfg *LambdaConfig) (LambdaHandlerFunc, error) {
	var missing error
	if p == nil {
		missing = errors.New("batch processor is nil")
	}
	c, err := lambdaConfig(cfg, missing)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		fifo := false
		for i := range ev.Records {
			if ev.Records[i].MessageId == "" {
				return resp, fmt.Errorf("sqsbroker: record %d has no messageId: cannot report it as a batch item failure", i)
			}
			fifo = fifo || strings.HasSuffix(ev.Records[i].EventSourceARN, ".fifo")
		}
		fail := func(rec *events.SQSMessage, err error) {
			c.Logger.Info("SQS record failed; reported in batchItemFailures", watermill.LogFields{
				"sqs_message_id": rec.MessageId, "error": err.Error(), "dead_letter_reason": ackgap.ReasonOf(err),
			})
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
		if tooLate(ctx, c.DeadlineMargin) {
			for i := range ev.Records {
				fail(&ev.Records[i], fmt.Errorf("not run: the invocation's deadline is less than %s away", c.DeadlineMargin))
			}
			return resp, nil
		}
		for i, err := range lambdaRun(ctx, p, c.Unmarshaler, ev.Records, fifo) {
			if err != nil {
				fail(&ev.Records[i], err)
			}
		}
		return resp, nil
	}, nil
}

// lambdaRun runs recs through p as one batch and returns, per record, nil
// when it may be deleted (applied, duplicate) and else why not. With fifo
// each record's MessageGroupId is its ordering key, and a record that
// does not unmarshal holds back its group's later records.
func lambdaRun(ctx context.Context, p BatchFunc, u wsqs.Unmarshaler, recs []events.SQSMessage, fifo bool) []error {
	errs := make([]error, len(recs))
	msgs := make([]*message.Message, 0, len(recs))
	idx := make([]int, 0, len(recs))
	blocked := map[string]string{} // group -> MessageId of its failed record
	for i := range recs {
		rec := &recs[i]
		group, hasGroup := rec.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		hasGroup = hasGroup && fifo
		if first, ok := blocked[group]; hasGroup && ok {
			errs[i] = fmt.Errorf("not run: record %s of its message group failed earlier in this batch", first)
			continue
		}
		msg, err := u.Unmarshal(recordMessage(rec))
		if err != nil {
			errs[i] = err
			if hasGroup {
				blocked[group] = rec.MessageId
			}
			continue
		}
		n, _ := strconv.Atoi(rec.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		// Lambda deletes the records it is not told about after the function
		// returns: the adapter cannot see that confirmation.
		msg.SetContext(ackgap.WithDelivery(ctx, &ackgap.Delivery{
			MessageID: rec.MessageId, ReceiveCount: n, Confirmation: ackgap.ConfirmationUnobserved,
			Key: group, HasKey: hasGroup,
		}))
		msgs = append(msgs, msg)
		idx = append(idx, i)
	}
	// A batch that failed as a whole has every message failed.
	for j, err := range p(ctx, msgs) {
		// Ack and Nack tell what watches the messages (batch.Config.Trace:
		// telemetry) what became of them.
		if err != nil {
			errs[idx[j]] = err
			msgs[j].Nack()
			continue
		}
		msgs[j].Ack()
	}
	return errs
}
