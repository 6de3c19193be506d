// Package brokers holds ackgap's broker adapters, one leaf package each,
// so the core (router, middleware, stores) imports no broker client:
//
//   - kafkabroker: Kafka through watermill-kafka v3 and Sarama; consumer
//     groups with offsets committed after the ack, and a shutdown that lets
//     in-flight messages finish and commit.
//
// An adapter provides a Watermill Subscriber with safe defaults and a
// Publisher that carries the producer-assigned event id (metadata key
// "event_id") with every copy of a message. This package itself has no
// code.
package brokers
