// Package brokers holds ackgap's broker adapters, one leaf package each,
// so the core (router, middleware, stores) imports no broker client:
//
//   - kafkabroker: Kafka through watermill-kafka v3 and Sarama; consumer
//     groups with offsets committed after the ack, and a shutdown that lets
//     in-flight messages finish and commit.
//   - sqsbroker: Amazon SQS through aws-sdk-go-v2 (watermill-aws for
//     publishing); the visibility timeout checked against the handler
//     timeout, leases extended by a heartbeat while a message is in flight
//     or waits in its batch, nacks that come back after a short delay, a
//     dead-letter queue, and an AWS Lambda adapter with partial batch
//     responses.
//   - gochannelbroker: Watermill's in-process GoChannel, the embedded
//     default.
//
// An adapter provides a Watermill Subscriber with safe defaults and a
// Publisher that carries the producer-assigned event id (metadata key
// "event_id") with every copy of a message, reports when the broker
// confirmed an ack through ackgap.Delivery in the message context, and
// runs the redelivery suite in brokertest with an honest Features sheet.
// This package itself has no code.
package brokers
