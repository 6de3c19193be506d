package lambdabatch

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"
)

type article struct{ Topic string }

func generate(a article) error { return process(events.SQSMessage{Body: a.Topic}) }

// handleDecodedFirst decodes the batch into its own slice, then works it
// one by one (field trial, wave 52: squeak's news generator): the error
// returned from the second loop fails the whole batch all the same.
func handleDecodedFirst(ctx context.Context, ev events.SQSEvent) error {
	var reqs []article
	for _, r := range ev.Records {
		var a article
		if json.Unmarshal([]byte(r.Body), &a) != nil {
			continue
		}
		reqs = append(reqs, a)
	}
	for _, a := range reqs {
		if err := generate(a); err != nil {
			return err // want `medium: returning an error for one record fails the whole SQS batch`
		}
	}
	return nil
}
