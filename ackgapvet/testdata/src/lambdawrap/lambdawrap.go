// Package lambdawrap: one Lambda function serves two event sources; its
// handler takes a type of its own that wraps the SQS event.
package lambdawrap

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Event is filled by its own UnmarshalJSON with whichever event came.
type Event struct {
	SQSEvent *events.SQSEvent
	Other    map[string]string
}

func handler(ctx context.Context, ev Event) (map[string]any, error) {
	if ev.SQSEvent == nil {
		return nil, nil
	}
	for _, r := range ev.SQSEvent.Records {
		_, _ = http.Post("https://sms.example.com/send", "text/plain", strings.NewReader(r.Body)) // want `an HTTP request \(http.Post\) on the consumer path of Lambda SQS handler repeats`
	}
	return map[string]any{"batchItemFailures": []string{}}, nil
}

// fixture takes the wrapped event among three parameters: not a
// handler.
func fixture(name string, ev Event, n int) {
	_, _ = http.Post("https://example.com/"+name, "text/plain", nil)
}

// streams is a DynamoDB Streams handler: a consumer like a Kinesis one.
func streams(ctx context.Context, ev events.DynamoDBEvent) error {
	for _, r := range ev.Records {
		_, _ = http.Post("https://mail.example.com/send", "text/plain", strings.NewReader(r.EventID)) // want `an HTTP request \(http.Post\) on the consumer path of Lambda DynamoDB Streams handler streams repeats`
	}
	return nil
}
