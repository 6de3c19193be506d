// Package freshput stores each SQS record in DynamoDB under an id made
// afresh per delivery (field trial, wave 40: eztoll's toll records keyed by
// ksuid.NewRandom): PutItem overwrites by key, but each redelivery's key is
// new, so it writes a second item. Its twin keys the item by the message.
package freshput

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/uuid"
)

// S stores tolls.
type S struct{ DB *dynamodb.Client }

// Tolls writes one item per record under a fresh id.
func (s *S) Tolls(ctx context.Context, ev events.SQSEvent) error {
	for _, r := range ev.Records {
		id := uuid.New()
		item := map[string]string{"id": id.String(), "plate": r.Body}
		if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{Item: item}); err != nil {
			return err
		}
	}
	return nil
}

// TollsKeyed writes one item per record under the message's id.
func (s *S) TollsKeyed(ctx context.Context, ev events.SQSEvent) error {
	for _, r := range ev.Records {
		item := map[string]string{"id": r.MessageId, "plate": r.Body, "request": uuid.NewString()}
		if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{Item: item}); err != nil {
			return err
		}
	}
	return nil
}
