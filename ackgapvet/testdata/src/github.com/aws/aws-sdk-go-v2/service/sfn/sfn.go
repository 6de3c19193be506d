// Package sfn is a stub of aws-sdk-go-v2's Step Functions client.
package sfn

// StartExecutionInput is a stub.
type StartExecutionInput struct{ Name, StateMachineArn *string }

// StartExecutionOutput is a stub.
type StartExecutionOutput struct{}

// DescribeExecutionInput is a stub.
type DescribeExecutionInput struct{}

// DescribeExecutionOutput is a stub.
type DescribeExecutionOutput struct{}
