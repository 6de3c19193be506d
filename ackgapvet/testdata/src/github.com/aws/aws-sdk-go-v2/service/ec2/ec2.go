// Package ec2 is a stub of aws-sdk-go-v2's EC2 client.
package ec2

import "context"

// Options is a stub.
type Options struct{}

// Client is a stub.
type Client struct{}

// RunInstancesInput is a stub.
type RunInstancesInput struct {
	ImageId     *string
	ClientToken *string
}

// RunInstancesOutput is a stub.
type RunInstancesOutput struct{}

// RunInstances is a stub.
func (c *Client) RunInstances(ctx context.Context, in *RunInstancesInput, opts ...func(*Options)) (*RunInstancesOutput, error) {
	return &RunInstancesOutput{}, nil
}
