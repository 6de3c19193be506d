package kafkabroker_test

import (
	"fmt"

	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

// A producer stamps the event id once, from the business event, and sets
// the partition key so every event of one order lands in one partition.
func ExampleNewEvent() {
	msg, err := kafkabroker.NewEvent("order-42.placed", []byte(`{"order_id":"42"}`))
	if err != nil {
		panic(err)
	}
	msg.Metadata.Set(kafkabroker.MetadataPartitionKey, "order-42")

	rec, err := kafkabroker.Marshaler{}.Marshal("orders", msg)
	if err != nil {
		panic(err)
	}
	key, _ := rec.Key.Encode()
	fmt.Printf("key %s\n", key)
	for _, h := range rec.Headers {
		fmt.Printf("header %s=%s\n", h.Key, h.Value)
	}

	_, err = kafkabroker.NewEvent("", nil)
	fmt.Println(err)
	// Output:
	// key order-42
	// header _watermill_message_uuid=order-42.placed
	// header event_id=order-42.placed
	// header partition_key=order-42
	// kafkabroker: ackgap: message has no event id: an event id is assigned once by the producer and cannot be empty
}
