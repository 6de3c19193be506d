// Package dynamodb is a stub of aws-sdk-go-v2's DynamoDB client.
package dynamodb

import "context"

// Options is a stub.
type Options struct{}

// Client is a stub.
type Client struct{}

// UpdateItemInput is a stub.
type UpdateItemInput struct {
	UpdateExpression    *string
	ConditionExpression *string
}

// UpdateItemOutput is a stub.
type UpdateItemOutput struct{}

// UpdateItem is a stub.
func (c *Client) UpdateItem(ctx context.Context, in *UpdateItemInput, opts ...func(*Options)) (*UpdateItemOutput, error) {
	return &UpdateItemOutput{}, nil
}

// ConditionalCheckFailedException is a stub of types.ConditionalCheckFailedException.
type ConditionalCheckFailedException struct{}

func (*ConditionalCheckFailedException) Error() string { return "conditional check failed" }

// PutItemInput is a stub.
type PutItemInput struct {
	TableName *string
	Item      map[string]string
}

// PutItemOutput is a stub.
type PutItemOutput struct{}

// PutItem is a stub.
func (c *Client) PutItem(ctx context.Context, in *PutItemInput, opts ...func(*Options)) (*PutItemOutput, error) {
	return &PutItemOutput{}, nil
}
