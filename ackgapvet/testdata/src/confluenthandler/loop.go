// Package confluenthandler is a confluent-kafka-go loop with auto-commit on
// that calls the application's handler through a function value.
package confluenthandler

import (
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Handler processes one message.
type Handler func(msg *kafka.Message) error

// Start reads and calls h: the offsets are committed in the background
// whatever h does.
func Start(h func(*kafka.Message) error) error {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"group.id": "dispatch"}) // want `kafka.NewConsumer with "enable.auto.commit" on \(the default\) commits polled offsets in the background, before the poll loop's work \(the handler h at line \d+\) is done`
	if err != nil {
		return err
	}
	for {
		msg, err := c.ReadMessage(time.Second)
		if err != nil {
			continue
		}
		_ = h(msg)
	}
}
