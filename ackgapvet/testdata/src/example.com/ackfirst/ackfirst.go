// Package ackfirst declares a Watermill handler that another package
// registers; it acks before its write.
package ackfirst

import (
	"database/sql"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Orders handles order events.
type Orders struct {
	DB     *sql.DB
	Client *http.Client
}

// Handle is an exported Watermill handler.
func (o *Orders) Handle(msg *message.Message) error {
	msg.Ack() // want `medium: acks with message.Message.Ack before the work \(a database write \(sql.DB.Exec\) at line \d+\)`
	_, err := o.DB.Exec("INSERT INTO orders VALUES ($1)", msg.UUID)
	return err
}
