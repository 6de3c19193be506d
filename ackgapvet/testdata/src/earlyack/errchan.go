package earlyack

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func bounce(m events.SQSMessage) error {
	if m.Body == "" {
		return errors.New("empty")
	}
	return nil
}

// Bounces works each record in its own goroutine and deletes it there
// after the work; a failure is sent on errs and returns before the delete
// (field trial, wave 52: score's worker): no hand-off before the delete.
func Bounces(ctx context.Context, ev events.SQSEvent) error {
	var svc *sqs.Client
	errs := make(chan error, len(ev.Records))
	var wg sync.WaitGroup
	for _, r := range ev.Records {
		wg.Add(1)
		go func(m events.SQSMessage) {
			defer wg.Done()
			if err := bounce(m); err != nil {
				errs <- fmt.Errorf("message %s: %v", m.MessageId, err)
				return
			}
			_, _ = svc.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: &m.ReceiptHandle})
		}(r)
	}
	wg.Wait()
	close(errs)
	return <-errs
}
