// Package natsiface subscribes through the application's own interface
// over a JetStreamContext (field trial, wave 60: auraedu's
// eventbus.JetStreamContext): the callback is a JetStream consumer all the
// same, and its Ack after a failure only logged is errack's.
package natsiface

import (
	"database/sql"
	"log"

	"github.com/nats-io/nats.go"
)

// JetStream is the part of nats.JetStreamContext the bus uses.
type JetStream interface {
	Subscribe(subj string, cb nats.MsgHandler, opts ...nats.SubOpt) (*nats.Subscription, error)
}

// Invoices marks each invoice paid and acks it, even when the update failed.
func Invoices(js JetStream, db *sql.DB) error {
	_, err := js.Subscribe("invoices", func(m *nats.Msg) {
		if _, err := db.Exec("UPDATE invoices SET paid = true WHERE id = $1", string(m.Data)); err != nil {
			log.Printf("invoice: %v", err)
		}
		_ = m.Ack()
	}, nats.ManualAck())
	return err
}
