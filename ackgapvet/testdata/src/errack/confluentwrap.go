package errack

import (
	"context"
	"database/sql"
	"log"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// KafkaConsumer is the application's wrapper over *kafka.Consumer (field
// trial wave 5, inventory-api): a loop written against it is a
// confluent-kafka-go poll loop.
type KafkaConsumer interface {
	Poll(timeoutMs int) kafka.Event
	CommitOffsets(offsets []kafka.TopicPartition) ([]kafka.TopicPartition, error)
}

func wrappedLoop(ctx context.Context, c KafkaConsumer, db *sql.DB) {
	for {
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			if _, err := db.ExecContext(ctx, "UPDATE resources SET token = $1 WHERE id = $2", e.Value, e.Key); err != nil { // want `a message whose db.ExecContext fails is not acked but the loop goes on`
				log.Println(err)
				continue
			}
			_, _ = c.CommitOffsets([]kafka.TopicPartition{e.TopicPartition})
		}
	}
}
