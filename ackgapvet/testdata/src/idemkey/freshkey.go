package idemkey

import (
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
)

// BookFlight is a command with an idempotency key, as a saga sends it.
type BookFlight struct {
	FlightID       string
	IdempotencyKey string
}

type commandBus interface {
	Send(ctx context.Context, cmd any) error
}

// UpdateItemInput has the fields of a DynamoDB UpdateItem request.
type UpdateItemInput struct {
	Key                 map[string]string
	UpdateExpression    *string
	ConditionExpression *string
}

func str(s string) *string { return &s }

func registerSaga(r *message.Router, bus commandBus, client *http.Client) {
	r.AddNoPublisherHandler("book", "tickets", nil, func(msg *message.Message) error {
		return bus.Send(msg.Context(), BookFlight{
			FlightID:       msg.UUID,
			IdempotencyKey: uuid.NewString(), // want `medium: IdempotencyKey is made with uuid.NewString on the consumer path`
		})
	})
	r.AddNoPublisherHandler("book-keyed", "tickets", nil, func(msg *message.Message) error {
		return bus.Send(msg.Context(), BookFlight{FlightID: msg.UUID, IdempotencyKey: "book-" + msg.UUID}) // clean
	})
	r.AddNoPublisherHandler("charge-random", "orders", nil, func(msg *message.Message) error {
		req, err := http.NewRequestWithContext(msg.Context(), http.MethodPost, "https://pay.example/charges", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Idempotency-Key", uuid.New().String()) // want `medium: Idempotency-Key is made with uuid.New on the consumer path`
		_, err = client.Do(req)
		return err
	})
	r.AddNoPublisherHandler("count", "participations", nil, func(msg *message.Message) error {
		_ = UpdateItemInput{ // want `medium: increments participant_count with a DynamoDB update`
			Key:              map[string]string{"id": msg.UUID},
			UpdateExpression: str("SET participant_count = participant_count + :c"),
		}
		_ = UpdateItemInput{ // want `medium: increments visits with a DynamoDB update \("ADD visits :one"\)`
			UpdateExpression: str("ADD visits :one"),
		}
		_ = UpdateItemInput{ // clean: conditional on the event not being recorded
			UpdateExpression:    str("SET participant_count = participant_count + :c, last_event = :e"),
			ConditionExpression: str("last_event <> :e"),
		}
		_ = UpdateItemInput{UpdateExpression: str("SET status = :s")} // clean: an overwrite
		return nil
	})
}
