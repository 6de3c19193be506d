// Package sqs is a stub of aws-sdk-go v1's SQS client.
package sqs

import "context"

type Message struct{ Body, MessageId, ReceiptHandle *string }

type ReceiveMessageInput struct {
	QueueUrl            *string
	MaxNumberOfMessages *int64
}
type ReceiveMessageOutput struct{ Messages []*Message }
type DeleteMessageInput struct{ QueueUrl, ReceiptHandle *string }
type DeleteMessageOutput struct{}
type SendMessageInput struct{ QueueUrl, MessageBody *string }
type SendMessageOutput struct{}
type ChangeMessageVisibilityInput struct{ QueueUrl, ReceiptHandle *string }
type ChangeMessageVisibilityOutput struct{}

type SQS struct{}

func (c *SQS) ReceiveMessage(in *ReceiveMessageInput) (*ReceiveMessageOutput, error) { return nil, nil }
func (c *SQS) ReceiveMessageWithContext(ctx context.Context, in *ReceiveMessageInput) (*ReceiveMessageOutput, error) {
	return nil, nil
}
func (c *SQS) DeleteMessage(in *DeleteMessageInput) (*DeleteMessageOutput, error) { return nil, nil }
func (c *SQS) DeleteMessageWithContext(ctx context.Context, in *DeleteMessageInput) (*DeleteMessageOutput, error) {
	return nil, nil
}
func (c *SQS) SendMessageWithContext(ctx context.Context, in *SendMessageInput) (*SendMessageOutput, error) {
	return nil, nil
}
func (c *SQS) ChangeMessageVisibilityWithContext(ctx context.Context, in *ChangeMessageVisibilityInput) (*ChangeMessageVisibilityOutput, error) {
	return nil, nil
}
