package errack

import (
	"context"
	"encoding/json"
	"log"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// RawHandle takes the event raw and decodes the SQS event itself (field
// trial wave 5, duracloud-pilot): still a Lambda SQS handler.
func RawHandle(ctx context.Context, event json.RawMessage) error {
	var ev events.SQSEvent
	if err := json.Unmarshal(event, &ev); err != nil {
		return err
	}
	for _, rec := range ev.Records {
		if _, err := http.Post("http://ship.local/"+rec.Body, "text/plain", nil); err != nil { // want `a record whose http.Post fails \(line \d+\) is only logged`
			log.Println(err)
		}
	}
	return nil
}

// RawResponse answers with a partial batch response: a handler by its
// result type.
func RawResponse(ctx context.Context, event json.RawMessage) (events.SQSEventResponse, error) {
	var ev events.SQSEvent
	_ = json.Unmarshal(event, &ev)
	for _, rec := range ev.Records {
		if _, err := http.Post("http://ship.local/"+rec.Body, "text/plain", nil); err != nil { // want `a record whose http.Post fails \(line \d+\) is only logged`
			log.Println(err)
		}
	}
	return events.SQSEventResponse{}, nil
}

// Dispatch decodes and hands the event on: Handle is the handler, not
// Dispatch (no second finding here).
func Dispatch(ctx context.Context, event json.RawMessage) error {
	var ev events.SQSEvent
	if err := json.Unmarshal(event, &ev); err != nil {
		return err
	}
	_, err := Handle(ctx, ev)
	return err
}
