// Package nocommit turns librdkafka's offset store off and never stores
// or commits an offset (field trial, wave 24: notification-service-go
// H1): the group never commits, and each restart reads from
// auto.offset.reset again.
package nocommit

import (
	"database/sql"
	"log"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Run sends each message's mail and never stores its offset.
func Run(db *sql.DB) {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"group.id": "mailer", "auto.offset.reset": "earliest", "enable.auto.offset.store": false})
	if err != nil {
		log.Fatal(err)
	}
	for {
		if m, ok := c.Poll(100).(*kafka.Message); ok {
			if _, err := db.Exec("INSERT INTO mails (body) VALUES ($1)", string(m.Value)); err != nil {
				log.Print(err)
			}
		}
	}
}
