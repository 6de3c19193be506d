// Package lookupack has Watermill handlers that look a customer up before
// they write: one answers any failed lookup like a missing customer (the
// message is acked: field trial, wave 37, cyphera-monorepo H5), two tell
// a missing row from a failed read.
package lookupack

import (
	"context"
	"database/sql"
	"errors"
	"log"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// Queries is sqlc-style generated code.
type Queries struct{ db *sql.DB }

const getCustomer = `-- name: GetCustomer :one
SELECT id FROM customers WHERE external_id = $1`

// GetCustomer returns the customer's id.
func (q *Queries) GetCustomer(ctx context.Context, externalID string) (int64, error) {
	var id int64
	err := q.db.QueryRowContext(ctx, getCustomer, externalID).Scan(&id)
	return id, err
}

// H credits customers.
type H struct {
	Q  *Queries
	DB *sql.DB
}

// Credit skips the message on any failed lookup.
func (h *H) Credit(msg *message.Message) error {
	id, err := h.Q.GetCustomer(msg.Context(), string(msg.Payload))
	if err != nil {
		log.Printf("no customer: %v", err)
		return nil
	}
	_, err = h.DB.ExecContext(msg.Context(), "UPDATE customers SET credited = true WHERE id = $1", id)
	return err
}

// CreditKnown skips only a missing customer.
func (h *H) CreditKnown(msg *message.Message) error {
	id, err := h.Q.GetCustomer(msg.Context(), string(msg.Payload))
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = h.DB.ExecContext(msg.Context(), "UPDATE customers SET credited = true WHERE id = $1", id)
	return err
}

// CreditNested tells them apart inside the error branch.
func (h *H) CreditNested(msg *message.Message) error {
	id, err := h.Q.GetCustomer(msg.Context(), string(msg.Payload))
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			log.Printf("no customer")
			return nil
		}
		return err
	}
	_, err = h.DB.ExecContext(msg.Context(), "UPDATE customers SET credited = true WHERE id = $1", id)
	return err
}

// CreditRow reads the customer with QueryRow and Scan itself, and skips
// the message on any failed read.
func (h *H) CreditRow(msg *message.Message) error {
	var id int64
	if err := h.DB.QueryRowContext(msg.Context(), "SELECT id FROM customers WHERE external_id = $1", string(msg.Payload)).Scan(&id); err != nil {
		return nil
	}
	row := h.DB.QueryRowContext(msg.Context(), "SELECT credited FROM customers WHERE id = $1", id)
	var credited bool
	if err := row.Scan(&credited); err != nil {
		return nil
	}
	if credited {
		return nil
	}
	_, err := h.DB.ExecContext(msg.Context(), "UPDATE customers SET credited = true WHERE id = $1", id)
	return err
}

// Register adds the handlers.
func Register(r *message.Router, sub message.Subscriber, h *H) {
	r.AddNoPublisherHandler("credit", "credits", sub, h.Credit)
	r.AddNoPublisherHandler("credit-known", "credits", sub, h.CreditKnown)
	r.AddNoPublisherHandler("credit-nested", "credits", sub, h.CreditNested)
	r.AddNoPublisherHandler("credit-row", "credits", sub, h.CreditRow)
}

// Ship marks each paid order shipped; a record whose lookup fails is only
// logged, so Lambda deletes it with the batch (a new user's report).
func (h *H) Ship(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		var status string
		if err := h.DB.QueryRowContext(ctx, "SELECT status FROM orders WHERE id = $1", rec.Body).Scan(&status); err != nil {
			log.Printf("lookup %s: %v", rec.Body, err)
			continue
		}
		if status != "paid" {
			continue
		}
		if _, err := h.DB.ExecContext(ctx, "UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid'", rec.Body); err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp, nil
}

// MainShip starts the shipping Lambda.
func MainShip(h *H) { lambda.Start(h.Ship) }
