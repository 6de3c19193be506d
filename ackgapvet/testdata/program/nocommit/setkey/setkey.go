// Package setkey turns the offset store off with SetKey on a literal it
// built, and never stores an offset.
package setkey

import (
	"database/sql"
	"log"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Run inserts each message and never stores its offset.
func Run(db *sql.DB) {
	cfg := &kafka.ConfigMap{"group.id": "audit"}
	_ = cfg.SetKey("enable.auto.offset.store", false)
	c, err := kafka.NewConsumer(cfg)
	if err != nil {
		log.Fatal(err)
	}
	for {
		if m, ok := c.Poll(100).(*kafka.Message); ok {
			if _, err := db.Exec("INSERT INTO audit (body) VALUES ($1) ON CONFLICT DO NOTHING", string(m.Value)); err != nil {
				return
			}
		}
	}
}
