// Package launcher launches a runner per queued job and records it in
// DynamoDB through interfaces of its own over the SDK clients (wave 16,
// jit-runners' scale-up handler).
package launcher

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DynamoAPI is the code's own interface over the DynamoDB client.
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// EC2API is the code's own interface over the EC2 client.
type EC2API interface {
	RunInstances(ctx context.Context, in *ec2.RunInstancesInput, opts ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error)
}

// Store records runners.
type Store struct{ DB DynamoAPI }

// Put records one runner by its job id (a write by key).
func (s *Store) Put(ctx context.Context, job string) error {
	_, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{Item: map[string]string{"job": job}})
	return err
}

// Scaler consumes the job queue.
type Scaler struct {
	Q     *sqs.Client
	URL   string
	Store *Store
	EC2   EC2API
}

// Run deletes a message once handle returned nil.
func (s *Scaler) Run(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := s.Q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &s.URL})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			if err := s.handle(ctx, *m.Body); err != nil {
				continue
			}
			_, _ = s.Q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &s.URL, ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// handle launches (a spot request first, then on demand, whose failure is
// returned: not reported), and logs a failed record: the message is
// deleted all the same, and the runner is never recorded.
func (s *Scaler) handle(ctx context.Context, job string) error {
	image := "ami-runner"
	// No ClientToken: a redelivery launches a second instance.
	if _, err := s.EC2.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: &image}); err != nil {
		log.Printf("spot launch failed, trying on demand: %v", err)
		// The job id as the ClientToken: EC2 launches once per token.
		token := "job-" + job
		if _, err = s.EC2.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: &image, ClientToken: &token}); err != nil {
			return err
		}
	}
	if err := s.Store.Put(ctx, job); err != nil {
		log.Printf("record runner state: %v", err)
	}
	return nil
}
