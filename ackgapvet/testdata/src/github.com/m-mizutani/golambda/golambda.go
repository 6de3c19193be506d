// Package golambda stubs m-mizutani/golambda, a wrapper of aws-lambda-go.
package golambda

// Event is the raw event a callback gets.
type Event struct{ Origin interface{} }

// EventRecord is one record's body.
type EventRecord []byte

// DecapSQSBody returns the bodies of an SQS event's records.
func (x *Event) DecapSQSBody() ([]EventRecord, error) { return nil, nil }

// Callback is what Start runs per invocation.
type Callback func(event Event) (interface{}, error)

// Start runs callback under lambda.Start.
func Start(callback Callback) {}
