// Package autocommitsaramapart reads partitions with Sarama's partition
// consumer at a constant offset and stores no position (field trial, wave
// 36: WBTech_L0 H1).
package autocommitsaramapart

import (
	"database/sql"

	"github.com/IBM/sarama"
)

func fromNewest(c sarama.Consumer, db *sql.DB) error {
	pc, err := c.ConsumePartition("orders", 0, sarama.OffsetNewest) // want `Sarama ConsumePartition with a constant offset and no stored position: .* every start reads at the newest offset \(OffsetNewest\): what was published while it was down is never read`
	if err != nil {
		return err
	}
	for msg := range pc.Messages() {
		if _, err := db.Exec("INSERT INTO orders(body) VALUES ($1)", msg.Value); err != nil {
			return err
		}
	}
	return nil
}

func fromOldest(c sarama.Consumer, db *sql.DB) error {
	pc, err := c.ConsumePartition("payments", 0, sarama.OffsetOldest) // want `every start reads at the oldest retained offset \(OffsetOldest\): every restart handles every retained message again`
	if err != nil {
		return err
	}
	for msg := range pc.Messages() {
		if _, err := db.Exec("UPDATE balances SET n = n + 1 WHERE id = $1", msg.Key); err != nil {
			return err
		}
	}
	return nil
}
