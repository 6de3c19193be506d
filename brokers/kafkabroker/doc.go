// Package kafkabroker connects ackgap to Kafka through Sarama (and
// watermill-kafka v3's publisher), with settings that keep a consumer
// correct under redelivery.
//
//	pub, err := kafkabroker.NewPublisher(&kafkabroker.PublisherConfig{Brokers: brokers}, logger)
//	sub, err := kafkabroker.NewSubscriber(&kafkabroker.SubscriberConfig{
//		Brokers:        brokers,
//		ConsumerGroup:  "billing",
//		HoldTimeout: router.MaxHoldTime(&routerCfg),
//	}, logger)
//	routerCfg.DeadLetter, routerCfg.DeadLetterTopic = pub, "orders.dlq"
//	r, err := router.New(store, &routerCfg)
//	err = r.AddHandler("billing", "orders", sub, handle)
//	go r.Run(ctx)
//	...
//	r.Close() // in-flight messages finish, commit, ack and commit their offsets
//
// A producer stamps each event's id once and keeps it on every copy:
//
//	msg, err := kafkabroker.NewEvent(orderPlacedID, payload)
//	msg.Metadata.Set(kafkabroker.MetadataPartitionKey, orderID) // one order, one partition
//	err = pub.Publish("orders", msg)
//
// # Publisher
//
// [NewPublisher] waits for all in-sync replicas and uses Sarama's
// idempotent producer, so an acknowledged record survives a leader crash
// and a retried request writes nothing twice. Its [Marshaler] carries every
// metadata key as a Kafka header (the event id, W3C traceparent, the
// dead-letter reason) and keys each record by metadata "partition_key", or
// the event id without one. It refuses a message that has no event id.
//
// # Subscriber
//
// [NewSubscriber] requires a consumer group and starts a new group at the
// oldest offset. It hands out one message of a partition at a time, in
// offset order: it is the key-parallel subscriber's engine (below) with
// [OrderingPartition] and MaxInFlight 1, so its offset commits,
// regression checks, finished-offset metadata and stops are the same. An
// offset is committed only after the router acked its message, that is
// after the inbox transaction committed. With the default CommitInterval
// (zero) a commit goes out as soon as the partition's offset moved and no
// commit is on the wire (commits coalesce under load); the next message
// does not wait for it. A crash redelivers the message in flight and those
// acked whose commit was not yet accepted, and the inbox skips them as
// duplicates. CommitInterval trades that for one commit per interval with
// a replay window of one interval.
//
// The ack gap on Kafka is ack -> offset commit returned: a process that
// dies in it, or a partition revoked by a rebalance before the commit,
// redelivers the message to the partition's next owner. Headers arrive as
// metadata; partition, offset, record key and timestamp are in the
// message context ([PartitionFromContext], [OffsetFromContext]).
//
// [Subscriber] also fixes shutdown. watermill-kafka's subscriber cancels
// every in-flight message's context as soon as its Close starts, and
// Watermill's router calls that Close first thing; a handler in the middle
// of its transaction would roll back and be redelivered. Subscriber stops
// handing out messages, waits up to CloseTimeout until each in-flight
// message was acked or nacked, and only then commits and closes the
// consumer; a handler still running after CloseTimeout is cancelled,
// rolled back and nacked (never dead-lettered), and redelivered later.
// Closing the consumer (last offset commits, leaving the group) gets
// LeaveTimeout more: a broker or coordinator lookup that stopped answering
// cannot hold Close, or the end of Subscribe's ctx, past CloseTimeout +
// LeaveTimeout ([ErrCloseTimedOut]).
//
// # Key-parallel subscriber
//
// [NewParallelSubscriber] ([ParallelConfig]) runs up to MaxInFlight
// records of one partition at once, same record key strictly in order
// ([OrderingKey]; [OrderingPartition] and [OrderingUnordered] too), with a
// per-partition bound on buffered records and bytes that stops fetching,
// never drops. It commits each partition's watermark (the lowest offset not
// yet acked) in one OffsetCommit request for all the member's partitions,
// sent to the group coordinator with the session's generation and member
// id, and settles a message's ackgap.Delivery confirmed only when a commit
// covering it was accepted; a refused, fenced or unanswered commit settles
// it with an error wrapping ackgap.ErrAckNotConfirmed and
// [ErrCommitRefused] and is retried with the current watermark. A failing
// message holds its partition's watermark: after a crash everything from
// it on is redelivered, and the inbox skips what was applied.
//
// Each OffsetCommit is bounded by ParallelConfig.CommitTimeout (default 5
// s, Kafka's offsets.commit.timeout.ms), not Sarama's Net.ReadTimeout (30
// s, shared with fetches). A commit left unanswered may still be applied
// late, after a newer one, and move the group's committed offset back
// below the watermark already reported. So after one, the subscriber
// fetches the committed offsets of its partitions (OffsetFetch to the
// coordinator) at the next commit round and then every second, for
// SessionTimeout, while it owns them in its generation; one found below
// what the coordinator accepted from it is reported ([ErrOffsetRegressed]
// at warn with the partition and offsets, [PartitionStats].Regressions)
// and repaired by committing the watermark again, without waiting for a
// new message or a rebalance. A partition claimed with a committed offset
// below one accepted from the subscriber before is reported the same way.
//
// Each commit also carries, in the partition's OffsetCommit metadata, the
// offsets acked above the watermark (bounded to 4 KiB, versioned
// "ackgap1:"), as the Confluent Parallel Consumer does; the partition's
// next owner skips those records without handing them out
// ([PartitionStats].ReplaysSkipped), so a graceful stop replays nothing
// that finished and a crash only what finished after the last commit. It
// is an optimisation: metadata that is missing, foreign or stale is
// ignored and the inbox skips what comes again; with
// SubscriberConfig.Progress set it is not used.
//
//	sub, err := kafkabroker.NewParallelSubscriber(&kafkabroker.ParallelConfig{
//		SubscriberConfig: kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: "billing"},
//		MaxInFlight:      64,
//	}, logger)
//
// # Batched transactions
//
// [NewBatchConsumer] runs a topic through a [BatchFunc] (batch.Processor's
// ProcessErrors: one transaction per batch, a savepoint per message) on top
// of a [ParallelSubscriber]: a batch is what the partitions have ready, up
// to MaxBatch (64) and BatchWait (1 ms) after its first message. Under
// OrderingKey a key's queued messages are handed out together, in offset
// order, up to MaxPerKey (16), and go into one batch, where batch.Processor
// applies them in rounds (one message per key per round, the BatchHandler
// once per round, all in the one transaction): a hot key costs one
// transaction per MaxPerKey messages. Concurrent batches never share a key.
// Messages are acked only after the batch's commit; a failing message is
// rolled back to its savepoint while the rest commits, except its key's
// later messages, which are held back; it is nacked (holding its key and
// watermark) or, when permanent or out of MaxAttempts, dead-lettered and
// acked, and those held back behind it are nacked without using an
// attempt. Dead letters go as the router sends them: the same metadata
// (ackgap.MetadataDeadLetterReason, Watermill's poison keys, the record's
// ackgap.MetadataSourceTopic, MetadataSourcePartition and
// MetadataSourceOffset), the same sanitised copy on
// ackgap.ErrUnencodable, the same logs at error (ackgap.LogDeadLettered,
// ackgap.LogDeadLetterFailed); a failed publish nacks the message.
//
//	p, err := batch.New[pgx.Tx](store, &batch.Config[pgx.Tx]{InboxConfig: middleware.InboxConfig{Consumer: "billing"}, Handler: charge})
//	bc, err := kafkabroker.NewBatchConsumer(p.ProcessErrors, &kafkabroker.BatchConsumerConfig{
//		ParallelConfig: kafkabroker.ParallelConfig{SubscriberConfig: kafkabroker.SubscriberConfig{Brokers: brokers, ConsumerGroup: "billing"}},
//		Topic:          "orders", DeadLetter: pub, DeadLetterTopic: "orders.dlq",
//	}, logger)
//	go bc.Run(ctx)
//
// # Observability
//
// Each message handed out carries an ackgap.Delivery in its context
// (ackgap.DeliveryFromContext): the consumer group, partition and offset,
// and Confirmation ackgap.ConfirmationReported. The subscriber settles it
// once: with the nack time, or with the ack time and the time the offset
// commit covering the message was accepted by the group coordinator
// (CommitInterval zero: the first commit after the ack; CommitInterval:
// the first periodic commit after it), or with an error wrapping
// ackgap.ErrAckNotConfirmed when the partition was released first,
// CloseTimeout ran out first, or the coordinator refused the commit or did
// not answer ([ErrCommitRefused], logged with the partition and offset).
// Package telemetry turns that into the span's broker_confirmed event and
// the ack gap. Sarama's ConsumerGroupSession.Commit reports a refused
// commit only on the group's error channel, so [Subscriber] and
// [ParallelSubscriber] send each OffsetCommit themselves, through a Kafka
// client of their own (one more connection), with the session's generation
// and member id, and read the answer per partition. Stats
// ([Subscriber.Stats], [ParallelSubscriber.Stats]) shows each partition's
// committed offset, watermark, in flight, buffered, lag, replays skipped
// and regressions. The same numbers are published as OpenTelemetry
// observable instruments (MetricPartitionCommitted and the other
// MetricPartition* constants, scope [ScopeName]) on
// SubscriberConfig.MeterProvider, per consumer group, topic and
// partition; the console's live page shows them as a table when its
// Recorder reads that provider. From outside the process, "ackgap status
// --kafka-brokers ..." shows the group's committed offsets, lag and, with
// [FinishedAbove], how many offsets above each the commit recorded
// finished.
//
// # Time limits
//
// Sarama heartbeats from its own goroutine, so a slow handler does not
// expire the group session (unlike the Java client's poll loop). What a
// slow handler meets is the rebalance: each member must finish its
// in-flight messages and rejoin within the rebalance timeout, so
// SubscriberConfig.HoldTimeout (the router's hold time, see
// router.MaxHoldTime) must stay below RebalanceTimeout by [CommitMargin], and at
// most [HoldTimeoutMax] (5 min, the Java max.poll.interval.ms default).
//
// # Local broker
//
// The tests run against kfake, franz-go's Kafka-protocol broker, started by
// tools/brokers.sh start at KAFKA_BROKERS (default 127.0.0.1:9092); they
// fail, never skip, when it is not running. The tests that pause or
// restart a broker run a kfake process of their own (built from
// tools/kfake when .bin/kfake is missing); the restart test keeps that
// broker's data on disk (kfake -data-dir) so a restart loses nothing.
package kafkabroker
