// Package wmmiddle adds a router middleware, which wraps every handler
// and is no consumer of its own (field trial, wave 47: tickets' metrics
// and correlation middlewares were listed as consumers), and one handler.
package wmmiddle

import (
	"database/sql"
	"log"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// timing logs how long each handler took.
func timing(next message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		start := time.Now()
		out, err := next(msg)
		log.Printf("%s took %v", msg.UUID, time.Since(start))
		return out, err
	}
}

// Wire adds the middleware and the orders handler.
func Wire(r *message.Router, sub message.Subscriber, db *sql.DB) {
	r.AddMiddleware(timing)
	r.AddNoPublisherHandler("orders", "orders", sub, func(msg *message.Message) error {
		_, err := db.Exec("UPDATE orders SET paid = true WHERE id = $1", string(msg.Payload))
		return err
	})
}
