// Package handlers declares Watermill and ackgap handlers that another
// package registers: exported functions with a handler's exact signature,
// and functions returned as a handler type, are entry points here.
package handlers

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Forward is an exported handler that publishes.
func Forward(msg *message.Message) ([]*message.Message, error) {
	_, err := http.Post("http://forward.local", "application/json", nil) // want `an HTTP request \(http.Post\) on the consumer path of watermill handler Forward repeats`
	return nil, err
}

// Apply is an exported ackgap handler.
func Apply(ctx context.Context, tx *sql.Tx, msg *message.Message) error {
	_, err := http.Post("http://stock.local/"+msg.UUID, "text/plain", nil) // want `an HTTP request \(http.Post\) on the consumer path of ackgap handler Apply, while a database transaction is open repeats`
	return err
}

// NewRefund returns a handler: the returned literal is an entry point.
func NewRefund(client *http.Client) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		_, err := client.Post("http://payments.local/refund", "application/json", nil) // want `critical: an HTTP request \(http.Client.Post\) on the consumer path of watermill handler \(func literal\) repeats`
		return err
	}
}

// validate has a handler's shape but is unexported and stored nowhere:
// clean.
func validate(msg *message.Message) error {
	_, err := http.Post("http://validate.local", "application/json", nil)
	return err
}

// Check takes a message but returns no error: no handler's shape, clean.
func Check(msg *message.Message) bool {
	_, err := http.Post("http://validate.local", "application/json", nil)
	return err == nil && validate(msg) == nil
}
