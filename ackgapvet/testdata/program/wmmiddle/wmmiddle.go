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

// refund settles its message itself: a failed update is nacked for a
// redelivery (field trial, wave 48: go-sac's priority scheduler, whose
// failure branch nacks and returns), so the router's ack after the
// handler's nil finds it already nacked.
func refund(db *sql.DB, msg *message.Message) {
	if _, err := db.Exec("UPDATE orders SET refunded = true WHERE id = $1", string(msg.Payload)); err != nil {
		log.Printf("refund: %v", err)
		msg.Nack()
		return
	}
}

// Wire adds the middleware and the orders and refunds handlers.
func Wire(r *message.Router, sub message.Subscriber, db *sql.DB) {
	r.AddMiddleware(timing)
	r.AddNoPublisherHandler("orders", "orders", sub, func(msg *message.Message) error {
		_, err := db.Exec("UPDATE orders SET paid = true WHERE id = $1", string(msg.Payload))
		return err
	})
	r.AddNoPublisherHandler("refunds", "refunds", sub, func(msg *message.Message) error {
		refund(db, msg)
		return nil
	})
}
