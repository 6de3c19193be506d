package lambdabatch

import (
	"context"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// fanOut works each record in a goroutine and returns the first failure
// after they are all done (field trial, wave 31: strava-wx H3): Lambda
// fails the whole batch and every record comes back, the done ones too.
func fanOut(ctx context.Context, ev events.SQSEvent) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(ev.Records))
	for _, r := range ev.Records {
		wg.Add(1)
		go func(r events.SQSMessage) {
			defer wg.Done()
			if err := process(r); err != nil {
				errs <- err
			}
		}(r)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err // want `returns an error after the batch's records were worked in goroutines, which fails the whole SQS batch: Lambda redelivers every record`
	}
	return nil
}

// fanOutLogged works each record in a goroutine and only counts the
// failures: no error is returned, so this rule has nothing to say.
func fanOutLogged(ctx context.Context, ev events.SQSEvent) error {
	var wg sync.WaitGroup
	for _, r := range ev.Records {
		wg.Add(1)
		go func(r events.SQSMessage) {
			defer wg.Done()
			_ = process(r)
		}(r)
	}
	wg.Wait()
	return nil
}
