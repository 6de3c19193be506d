// Package lambdarecords: a Lambda handler whose event is the application's
// own type holding the SQS records (field trial wave 14, ORCID-Hub
// Integration): one handler for an SQS batch and a direct invocation.
package lambdarecords

import (
	"context"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// Event is either an SQS batch or a direct call.
type Event struct {
	Records []events.SQSMessage `json:"Records"`
	Email   string
}

func handleRequest(ctx context.Context, e Event) error {
	for _, r := range e.Records {
		_, _ = http.Post("https://hub.example.com/users", "text/plain", strings.NewReader(r.Body)) // want `an HTTP request \(http.Post\) on the consumer path of Lambda SQS handler`
	}
	return nil
}

// summarize takes the same type but is not given to lambda.Start: not a
// handler.
func summarize(e Event) int {
	_, _ = http.Post("https://stats.example.com", "text/plain", strings.NewReader(e.Email))
	return len(e.Records)
}

func main() {
	_ = summarize
	lambda.Start(handleRequest)
}
