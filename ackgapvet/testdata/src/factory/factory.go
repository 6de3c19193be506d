package factory

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ackgap/ackgap/router"
)

// Handler is a local name for a handler's shape: only the registration
// says it is one.
type Handler func(msg *message.Message) error

func register(r *message.Router, ar *router.Router[*sql.Tx], client *http.Client, db *sql.DB) {
	r.AddNoPublisherHandler("charge", "orders", nil, message.NoPublishHandlerFunc(makeCharge(client)))
	r.AddNoPublisherHandler("ship", "orders", nil, message.NoPublishHandlerFunc(makeShip(client)))
	_ = ar.AddHandler("apply", "orders", nil, router.JSON(makeApply(db)))
}

func makeCharge(client *http.Client) Handler {
	return func(msg *message.Message) error {
		_, err := client.Post("http://payments.local/charge", "application/json", nil) // want `critical: an HTTP request \(http.Client.Post\) on the consumer path of watermill handler func literal returned by makeCharge repeats`
		return err
	}
}

// makeShip returns another factory's handler: followed.
func makeShip(client *http.Client) Handler { return shipWith(client, "http://shipping.local") }

func shipWith(client *http.Client, url string) Handler {
	return func(msg *message.Message) error {
		_, err := client.Post(url, "application/json", nil) // want `medium: an HTTP request \(http.Client.Post\) on the consumer path of watermill handler func literal returned by shipWith repeats`
		return err
	}
}

type order struct{ ID string }

func makeApply(db *sql.DB) func(ctx context.Context, tx *sql.Tx, msg *message.Message, o order) error {
	return func(ctx context.Context, tx *sql.Tx, msg *message.Message, o order) error {
		_, err := http.Post("http://stock.local/"+o.ID, "text/plain", nil) // want `medium: an HTTP request \(http.Post\) on the consumer path of ackgap handler func literal returned by makeApply`
		return err
	}
}

// makeCleanup builds a function that no one registers: clean.
func makeCleanup(client *http.Client) Handler {
	return func(msg *message.Message) error {
		_, err := client.Post("http://cache.local/purge", "text/plain", nil)
		return err
	}
}
