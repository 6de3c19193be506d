// Package enginemetric names the OpenTelemetry instruments of the Kafka
// watermark engine (package kafkabroker) in one place below both their
// writer and their reader: kafkabroker registers them, and the console
// reads them without importing kafkabroker (and so Sarama). Users read
// the names as kafkabroker's exported constants.
package enginemetric

// ScopeName is the instrumentation scope of kafkabroker's meter: its
// import path.
const ScopeName = "github.com/ackgap/ackgap/brokers/kafkabroker"

// Instrument names; kafkabroker's Metric* constants document them.
const (
	Committed      = "ackgap.kafka.partition.committed"
	Watermark      = "ackgap.kafka.partition.watermark"
	InFlight       = "ackgap.kafka.partition.in_flight"
	Buffered       = "ackgap.kafka.partition.buffered"
	Lag            = "ackgap.kafka.partition.lag"
	ReplaysSkipped = "ackgap.kafka.partition.replays_skipped"
	Regressions    = "ackgap.kafka.partition.regressions"
)
