// Package stored turns the offset store off and stores each offset after
// the work: the good twin of nocommit.
package stored

import (
	"database/sql"
	"log"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Run stores each message's offset after its insert.
func Run(db *sql.DB) {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"group.id": "mailer", "enable.auto.offset.store": false})
	if err != nil {
		log.Fatal(err)
	}
	for {
		if m, ok := c.Poll(100).(*kafka.Message); ok {
			if _, err := db.Exec("INSERT INTO mails (body) VALUES ($1) ON CONFLICT DO NOTHING", string(m.Value)); err != nil {
				return
			}
			if _, err := c.StoreMessage(m); err != nil {
				return
			}
		}
	}
}
