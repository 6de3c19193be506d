package errack

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Forward republishes a batch and never reads which entries SQS refused
// (field trial wave 6, serverless-sample-app H1: EventBridge PutEvents).
func Forward(ctx context.Context, ev events.SQSEvent, q *sqs.Client) error {
	var in sqs.SendMessageBatchInput
	for _, r := range ev.Records {
		in.Entries = append(in.Entries, sqs.SendMessageBatchRequestEntry{Id: &r.MessageId, MessageBody: &r.Body})
	}
	_, err := q.SendMessageBatch(ctx, &in) // want `SendMessageBatch can succeed with some entries refused, and the output's Failed is never read`
	return err
}

// ForwardChecked fails the invocation when an entry was refused (clean).
func ForwardChecked(ctx context.Context, ev events.SQSEvent, q *sqs.Client) error {
	var in sqs.SendMessageBatchInput
	out, err := q.SendMessageBatch(ctx, &in)
	if err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return context.Canceled
	}
	return nil
}

// SQSBatchAPI is the application's interface over the client (stubbed in
// its tests), as aws-sdk-go-v2's docs suggest.
type SQSBatchAPI interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// ForwardThroughInterface never reads the refused entries either.
func ForwardThroughInterface(ctx context.Context, ev events.SQSEvent, q SQSBatchAPI) error {
	var in sqs.SendMessageBatchInput
	_, err := q.SendMessageBatch(ctx, &in) // want `SendMessageBatch can succeed with some entries refused, and the output's Failed is never read`
	return err
}

// ForwardReadsOnError reads the refused entries only when the call failed,
// when the output is nil: the refusals of a successful call are lost.
func ForwardReadsOnError(ctx context.Context, ev events.SQSEvent, q *sqs.Client) error {
	var in sqs.SendMessageBatchInput
	out, err := q.SendMessageBatch(ctx, &in) // want `SendMessageBatch can succeed with some entries refused, and the output's Failed is never read`
	if err != nil {
		if len(out.Failed) > 0 {
			return err
		}
		return err
	}
	return nil
}
