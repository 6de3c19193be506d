// Package client is a stub of cloudevents/sdk-go/v2 for analysistest.
package v2

import "context"

type Event struct{}
type Result error

type Client interface {
	Send(ctx context.Context, e Event) Result
}
