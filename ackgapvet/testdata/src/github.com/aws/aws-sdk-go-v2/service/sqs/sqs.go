// Package sqs is a stub of aws-sdk-go-v2's SQS client.
package sqs

import "context"

type Options struct{}

type Message struct {
	Body, ReceiptHandle, MessageId *string
}

type ReceiveMessageInput struct {
	QueueUrl            *string
	MaxNumberOfMessages int32
	VisibilityTimeout   int32
}
type ReceiveMessageOutput struct{ Messages []Message }
type DeleteMessageInput struct{ QueueUrl, ReceiptHandle *string }
type DeleteMessageOutput struct{}
type SendMessageInput struct{ QueueUrl, MessageBody *string }
type SendMessageOutput struct{}

type Client struct{}

func (c *Client) ReceiveMessage(ctx context.Context, in *ReceiveMessageInput, opts ...func(*Options)) (*ReceiveMessageOutput, error) {
	return nil, nil
}
func (c *Client) DeleteMessage(ctx context.Context, in *DeleteMessageInput, opts ...func(*Options)) (*DeleteMessageOutput, error) {
	return nil, nil
}
func (c *Client) SendMessage(ctx context.Context, in *SendMessageInput, opts ...func(*Options)) (*SendMessageOutput, error) {
	return nil, nil
}

type BatchResultErrorEntry struct{ Id *string }
type SendMessageBatchRequestEntry struct{ Id, MessageBody *string }
type SendMessageBatchInput struct {
	QueueUrl *string
	Entries  []SendMessageBatchRequestEntry
}
type SendMessageBatchOutput struct{ Failed []BatchResultErrorEntry }

func (c *Client) SendMessageBatch(ctx context.Context, in *SendMessageBatchInput, opts ...func(*Options)) (*SendMessageBatchOutput, error) {
	return &SendMessageBatchOutput{}, nil
}

type ChangeMessageVisibilityInput struct {
	QueueUrl, ReceiptHandle *string
	VisibilityTimeout       int32
}
type ChangeMessageVisibilityOutput struct{}

func (c *Client) ChangeMessageVisibility(ctx context.Context, in *ChangeMessageVisibilityInput, opts ...func(*Options)) (*ChangeMessageVisibilityOutput, error) {
	return nil, nil
}
