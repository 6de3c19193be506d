// Package storeonly turns the background commit off and only stores
// offsets: nothing sends them, so the group never commits.
package storeonly

import (
	"database/sql"
	"log"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Run stores each offset after its insert and never commits.
func Run(db *sql.DB) {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"group.id": "audit", "enable.auto.commit": false})
	if err != nil {
		log.Fatal(err)
	}
	for {
		if m, ok := c.Poll(100).(*kafka.Message); ok {
			if _, err := db.Exec("INSERT INTO audit (body) VALUES ($1) ON CONFLICT DO NOTHING", string(m.Value)); err != nil {
				return
			}
			if _, err := c.StoreMessage(m); err != nil {
				return
			}
		}
	}
}
