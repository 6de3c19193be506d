// Package earlydel deletes each SQS message before it stores it in
// DynamoDB (a new user's consumer): through the code's own interface, and
// with a PutItem called in the loop.
package earlydel

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// OrderStore saves orders.
type OrderStore interface {
	Save(ctx context.Context, body string) error
}

// Dynamo is the store behind it.
type Dynamo struct{ DB *dynamodb.Client }

// Save updates the order's item.
func (d *Dynamo) Save(ctx context.Context, body string) error {
	expr := "SET body = :b"
	_, err := d.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{UpdateExpression: &expr})
	return err
}

// Consumer holds the store as the interface.
type Consumer struct {
	Q     *sqs.Client
	URL   string
	Store OrderStore
	DB    *dynamodb.Client
}

// Run deletes, then saves through the interface.
func (c *Consumer) Run(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := c.Q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &c.URL})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if _, err := c.Q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &c.URL, ReceiptHandle: m.ReceiptHandle}); err != nil {
				continue
			}
			_ = c.Store.Save(ctx, *m.Body)
		}
	}
}

// RunPut deletes, then puts the item by key.
func (c *Consumer) RunPut(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := c.Q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &c.URL})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if _, err := c.Q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &c.URL, ReceiptHandle: m.ReceiptHandle}); err != nil {
				continue
			}
			_, _ = c.DB.PutItem(ctx, &dynamodb.PutItemInput{Item: map[string]string{"body": *m.Body}})
		}
	}
}
