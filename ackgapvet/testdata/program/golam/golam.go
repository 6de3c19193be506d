// Package golam is a Lambda SQS handler on m-mizutani/golambda (wave 16,
// deepalert's Lambdas): the callback decodes the SQS records itself.
package golam

import (
	"bytes"
	"net/http"

	"github.com/m-mizutani/golambda"
)

// Main starts the Lambda.
func Main(c *http.Client) {
	golambda.Start(func(event golambda.Event) (interface{}, error) {
		return nil, handle(c, event)
	})
}

// handle posts each record: a redelivered batch posts again.
func handle(c *http.Client, event golambda.Event) error {
	bodies, err := event.DecapSQSBody()
	if err != nil {
		return err
	}
	for _, b := range bodies {
		resp, err := c.Post("https://alerts.example/notify", "application/json", bytes.NewReader(b))
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
	}
	return nil
}
