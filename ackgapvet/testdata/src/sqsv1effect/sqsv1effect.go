package sqsv1effect

import (
	"context"

	"github.com/aws/aws-sdk-go/service/dynamodb"
	"github.com/aws/aws-sdk-go/service/sqs"
)

func receive(ctx context.Context, svc *sqs.SQS, url string) []*sqs.Message {
	out, err := svc.ReceiveMessageWithContext(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
	if err != nil {
		return nil
	}
	return out.Messages
}

// consume is the loop (it calls the wrapper in a loop); its v1 calls are
// classified as v2's are.
func consume(ctx context.Context, svc *sqs.SQS, db *dynamodb.DynamoDB, url, table string) {
	for {
		for _, m := range receive(ctx, svc, url) {
			_, _ = db.GetItemWithContext(ctx, &dynamodb.GetItemInput{TableName: &table})                          // clean: a read
			_, _ = db.PutItemWithContext(ctx, &dynamodb.PutItemInput{TableName: &table})                          // clean: overwrite by key
			_, _ = db.UpdateItemWithContext(ctx, &dynamodb.UpdateItemInput{TableName: &table})                    // want `medium: an AWS call \(dynamodb.DynamoDB.UpdateItemWithContext\) on the consumer path of SQS receive loop consume repeats`
			_, _ = svc.ChangeMessageVisibilityWithContext(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url}) // clean: queue mechanics
			_, _ = svc.SendMessageWithContext(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: m.Body})    // want `an AWS call \(sqs.SQS.SendMessageWithContext\) on the consumer path of SQS receive loop consume repeats`
		}
	}
}
