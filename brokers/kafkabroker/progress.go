package kafkabroker

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
)

// ProgressReader returns the watermark the consumer's database holds for
// a partition (the progress row its transactions write: pgxstore,
// sqlitestore and mysqlstore Store.Progress), ok false when it holds none. It is called
// once per assigned partition at every assignment, before the partition's
// first fetch; it must return within ProgressReadTimeout (5 s).
type ProgressReader func(ctx context.Context, topic string, partition int32) (watermark int64, ok bool, err error)

// LogDatabaseBehind is what a subscriber logs, at warn, with
// consumer_group, topic, partition, committed_offset, stored_watermark and
// replayed, when it starts a partition from the stored watermark because
// the database is behind the group's committed offset.
const LogDatabaseBehind = "Database behind the group's committed offset (failover, restore, or an offset committed past what was applied): replaying from the stored watermark"

// LogGroupOffsetMissing is what a subscriber logs, at warn, with
// consumer_group, topic, partition and stored_watermark, when the group
// has no committed offset for a partition whose database stored a
// watermark (the group, or its offsets, deleted by hand; the group
// renamed): the partition starts from the stored watermark instead of
// Consumer.Offsets.Initial.
const LogGroupOffsetMissing = "The group has no committed offset but the database stored a watermark (group or its offsets deleted by hand, or the group renamed): starting from the stored watermark"

// ProgressReadTimeout bounds a [ProgressReader] call.
const ProgressReadTimeout = 5 * time.Second

// Rewinds counts the partitions started below the group's committed
// offset because the database was behind it (a failover to a standby
// that missed commits, a restore, a committed offset that moved ahead of
// what was applied), and the records that replays.
type Rewinds struct {
	// Partitions is how many partition assignments were rewound.
	Partitions atomic.Int64
	// Records is the sum of committed offset minus stored watermark over
	// them: the records replayed (the inbox skips those the database kept).
	Records atomic.Int64
	// Missing is how many partition assignments found no committed offset
	// of the group while the database stored a watermark, and so started
	// from the watermark (LogGroupOffsetMissing).
	Missing atomic.Int64
}

// rewind moves the start of each partition of s back to the watermark
// the database holds when that is below the group's committed offset, so
// a database that lost commits (failover, restore) is replayed into
// rather than left silently behind. Sarama's ResetOffset only ever lowers
// the start; a session's claims start from it after Setup. A failure to
// read is logged at error and the partition starts from the committed
// offset.
func rewind(s sarama.ConsumerGroupSession, client sarama.Client, conf *sarama.Config, group string, read ProgressReader, n *Rewinds, logger watermill.LoggerAdapter) {
	if read == nil {
		return
	}
	var keys []partitionKey
	for topic, partitions := range s.Claims() {
		for _, p := range partitions {
			keys = append(keys, partitionKey{topic, p})
		}
	}
	var committed map[partitionKey]int64
	cerr := errors.New("no Kafka client")
	if client != nil {
		committed, cerr = fetchCommitted(client, conf, group, keys)
	}
	for topic, partitions := range s.Claims() {
		for _, p := range partitions {
			fields := watermill.LogFields{"consumer_group": group, "topic": topic, "partition": p}
			ctx, cancel := context.WithTimeout(s.Context(), ProgressReadTimeout)
			stored, ok, err := read(ctx, topic, p)
			cancel()
			if err != nil {
				logger.Error("ackgap kafka: cannot read the stored watermark; the partition starts from the group's committed offset unchecked", err, fields)
				continue
			}
			if !ok {
				continue
			}
			if cerr != nil {
				// Unknown: ResetOffset lowers a committed offset above the
				// watermark; without one the partition starts from
				// Consumer.Offsets.Initial.
				logger.Error("ackgap kafka: cannot read the group's committed offsets to compare with the stored watermark", cerr, fields)
				s.ResetOffset(topic, p, stored, "")
				continue
			}
			at, known := committed[partitionKey{topic, p}]
			if !known || at < 0 {
				// No committed offset (a group deleted, or its offsets
				// deleted, by hand; a group renamed): every offset below
				// the watermark was applied, so start there rather than
				// from Consumer.Offsets.Initial, which would skip what the
				// database never saw (newest) or apply again what the
				// inbox pruner forgot (oldest). ResetOffset cannot lower
				// an offset that is not set; MarkOffset sets it.
				fields["stored_watermark"] = stored
				warn(logger, LogGroupOffsetMissing, nil, fields)
				if n != nil {
					n.Missing.Add(1)
				}
				s.MarkOffset(topic, p, stored, "")
				continue
			}
			if stored >= at {
				continue
			}
			fields["committed_offset"], fields["stored_watermark"], fields["replayed"] = at, stored, at-stored
			warn(logger, LogDatabaseBehind, nil, fields)
			if n != nil {
				n.Partitions.Add(1)
				n.Records.Add(at - stored)
			}
			s.ResetOffset(topic, p, stored, "")
		}
	}
}
