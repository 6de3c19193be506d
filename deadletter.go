package ackgap

// Metadata keys of a dead-letter copy, besides [MetadataDeadLetterReason]
// and Watermill's poison-queue keys. The router (behind any subscriber)
// and kafkabroker.BatchConsumer set them the same way.
const (
	// MetadataSourceTopic, MetadataSourcePartition and
	// MetadataSourceOffset locate the record a dead-letter copy was made
	// of, when it came from a Kafka partition (its [Delivery] has
	// HasOffset): the topic, and the partition and offset as decimal
	// strings ("3", "1042"). They are set on every dead-letter copy of a
	// Kafka consumer, the sanitised copy included, and on none from
	// brokers without offsets (SQS, GoChannel).
	//
	// Together they name one record, so a dead-letter reader can dedupe
	// on them: a consumer that crashes after the dead-letter publish but
	// before the offset commit covering the record gets the record again
	// and dead-letters it again, with the same three values (and the same
	// event id, when it had one; a copy without an event id has no other
	// stable identity). Two records of one event (a producer's resend)
	// have different offsets: dedupe those on the event id.
	MetadataSourceTopic     = "ackgap_source_topic"
	MetadataSourcePartition = "ackgap_source_partition"
	MetadataSourceOffset    = "ackgap_source_offset"

	// MetadataDeadLetterSanitized is set on a dead-lettered copy whose
	// metadata was cut down because the dead-letter publisher could not
	// encode the message as it was ([ErrUnencodable]); its value is the
	// publisher's error, printable ASCII, at most 512 bytes. Such a copy
	// carries the original payload, the event id, the dead-letter reason,
	// the trace context (traceparent, tracestate), the source keys above,
	// this key and [MetadataOriginalMetadata]: at most 9 keys, which
	// leaves SQS (10 attributes) room for its body-encoding attribute.
	MetadataDeadLetterSanitized = "ackgap_dead_letter_sanitized"
	// MetadataOriginalMetadata carries, on a sanitised copy, the original
	// metadata (Watermill's poison-queue keys included) as a JSON object
	// whose values are the base64 of each value's bytes (lossless for any
	// bytes).
	MetadataOriginalMetadata = "ackgap_original_metadata"
)

// Log messages of the dead-letter path, the same from the router and from
// kafkabroker.BatchConsumer, both at error, so an alert matches one text
// whichever consumer ran the message. Fields: event_id, consumer,
// message_uuid, reason (a Reason constant), destination (the dead-letter
// topic), attempts, and the handler's final error as the logger's error
// field ("error" with log/slog); a consumer may add its own (the
// BatchConsumer: partition, offset). Payloads are never logged; error
// texts are (keep secrets out of them).
const (
	// LogDeadLettered: the message was published to the dead-letter topic,
	// logged once the publish succeeded; with the field sanitized (the
	// publisher's error) when a sanitised copy went instead
	// ([MetadataDeadLetterSanitized]).
	LogDeadLettered = "message sent to the dead-letter topic"
	// LogDeadLetterFailed: the message should go to the dead-letter topic
	// but the publish failed (the sanitised copy too, if one was tried), so
	// it is nacked, never acked, and delivered again (its handler runs
	// again). Field publish_err says why the publish failed.
	LogDeadLetterFailed = "dead-letter publish failed; message nacked for redelivery"
)
