package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
)

// TestAPICalls: every SQS request through the transport is counted under
// its operation, failed ones too.
func TestAPICalls(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	calls := newAPICalls(tr)
	c := sqs.New(sqs.Options{
		BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", HTTPClient: &http.Client{Transport: calls},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "k", SecretAccessKey: "s"}, nil
		}),
	})
	ctx := context.Background()
	before := calls.snapshot()
	for range 3 {
		_, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srv.URL + "/q")})
		require.NoError(t, err)
	}
	_, _ = c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(srv.URL + "/q"),
		Entries: nil}) // refused by the SDK's validation: never sent
	_, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(srv.URL + "/q"),
		ReceiptHandle: aws.String("r"), VisibilityTimeout: 1})
	require.NoError(t, err)
	got := callsSince(before, calls.snapshot())
	require.Equal(t, map[string]int64{"ReceiveMessage": 3, "ChangeMessageVisibility": 1}, got)
	require.Equal(t, []string{"ReceiveMessage", "ChangeMessageVisibility"}, sortedOps(got))
}
