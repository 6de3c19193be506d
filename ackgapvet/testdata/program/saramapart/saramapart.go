// Package saramapart reads a partition with Sarama's partition consumer
// from the newest offset and stores no position (field trial, wave 36:
// WBTech_L0 H1): the map says that nothing commits.
package saramapart

import (
	"database/sql"

	"github.com/IBM/sarama"
)

// StoreOrders stores each order.
func StoreOrders(c sarama.Consumer, db *sql.DB) error {
	pc, err := c.ConsumePartition("orders", 0, sarama.OffsetNewest)
	if err != nil {
		return err
	}
	for msg := range pc.Messages() {
		if _, err := db.Exec("INSERT INTO orders(id, body) VALUES ($1, $2) ON CONFLICT DO NOTHING", msg.Key, msg.Value); err != nil {
			return err
		}
	}
	return nil
}
