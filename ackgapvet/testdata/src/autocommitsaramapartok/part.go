// Package autocommitsaramapartok reads a partition with Sarama's partition
// consumer from a position it stores itself: not reported.
package autocommitsaramapartok

import (
	"database/sql"

	"github.com/IBM/sarama"
)

func fromStored(c sarama.Consumer, db *sql.DB) error {
	var next int64
	if err := db.QueryRow("SELECT next_offset FROM positions WHERE topic = 'orders'").Scan(&next); err != nil {
		return err
	}
	pc, err := c.ConsumePartition("orders", 0, next)
	if err != nil {
		return err
	}
	for msg := range pc.Messages() {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO orders(body) VALUES ($1)", msg.Value); err != nil {
			_ = tx.Rollback()
			return err
		}
		if _, err := tx.Exec("UPDATE positions SET next_offset = $1 WHERE topic = 'orders'", msg.Offset+1); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}
