// Package saramapart reads a partition with Sarama's partition consumer, no
// consumer group.
package saramapart

import (
	"net/http"

	"github.com/IBM/sarama"
)

func Run(c sarama.Consumer) error {
	pc, err := c.ConsumePartition("orders", 0, -1)
	if err != nil {
		return err
	}
	defer pc.Close()
	for msg := range pc.Messages() {
		_, _ = http.Post("http://ship.local/"+string(msg.Key), "text/plain", nil) // want `an HTTP request \(http.Post\) .*repeats on every redelivery`
	}
	return nil
}
