package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/ackgap/ackgap/brokers/kafkabroker"
)

// Values of kafkaPartitionView.Metadata: what the committed offset's
// metadata is.
const (
	kafkaMetaNone     = "none"    // no metadata: nothing recorded finished above the committed offset
	kafkaMetaFinished = "ackgap1" // the watermark engine's finished offsets for this committed offset
	kafkaMetaOther    = "other"   // another client's, another version, damaged, or of another offset
)

// kafkaStatusView is the Kafka part of "status": the group's committed
// offsets on each partition of the topics.
type kafkaStatusView struct {
	Group      string               `json:"group"`
	Partitions []kafkaPartitionView `json:"partitions"`
	// Lag is the sum of the partitions' lags, over those with a
	// committed offset.
	Lag int64 `json:"lag"`
	// NoCommit is how many partitions have no committed offset.
	NoCommit int `json:"partitions_without_commit"`
}

// kafkaPartitionView is one partition's line.
type kafkaPartitionView struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the group's committed offset, the next record it
	// reads; null when none.
	Committed *int64 `json:"committed"`
	// End is the log end offset: the offset of the next record written.
	End int64 `json:"end"`
	// Lag is End - Committed; null without a committed offset.
	Lag *int64 `json:"lag"`
	// FinishedAbove is how many offsets above Committed the commit's
	// metadata records finished (Metadata "ackgap1"): a watermark-engine
	// consumer that claims the partition skips them.
	FinishedAbove int64 `json:"finished_above"`
	// Metadata says what the commit's metadata is: "none", "ackgap1" or
	// "other".
	Metadata string `json:"metadata"`
}

// kafkaStatus reads the group's committed offsets, their metadata and the
// log end offsets of the topics' partitions.
func kafkaStatus(k *kafkaTarget) (*kafkaStatusView, error) {
	client, admin, err := k.connect("ackgap-status")
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	defer client.Close()
	v := &kafkaStatusView{Group: k.kafkaGroup, Partitions: []kafkaPartitionView{}}
	for _, topic := range k.kafkaTopics {
		offsets, err := groupOffsets(client, admin, topic, k.kafkaGroup)
		if err != nil {
			return nil, fmt.Errorf("kafka topic %s: %w", topic, err)
		}
		for _, po := range offsets {
			pv := kafkaPartitionView{Topic: topic, Partition: po.partition, End: po.newest, Metadata: kafkaMetaNone}
			if po.committed < 0 {
				v.NoCommit++
				v.Partitions = append(v.Partitions, pv)
				continue
			}
			committed, lag := po.committed, max(po.newest-po.committed, 0)
			pv.Committed, pv.Lag = &committed, &lag
			v.Lag += lag
			if po.metadata != "" {
				pv.Metadata = kafkaMetaOther
				if n, ok := kafkabroker.FinishedAbove(po.metadata, po.committed); ok {
					pv.FinishedAbove, pv.Metadata = n, kafkaMetaFinished
				}
			}
			v.Partitions = append(v.Partitions, pv)
		}
	}
	return v, nil
}

// printKafkaStatus writes v as a table with a summary line.
func printKafkaStatus(w io.Writer, v *kafkaStatusView) error {
	fmt.Fprintf(w, "KAFKA group %s (FINISHED: offsets above the committed one that the watermark engine recorded finished in the commit; a restart skips them)\n", v.Group)
	t := newTable(w, "TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "FINISHED")
	other := 0
	for _, p := range v.Partitions {
		committed, lag, finished := "-", "-", "-"
		if p.Committed != nil {
			committed, lag = strconv.FormatInt(*p.Committed, 10), strconv.FormatInt(*p.Lag, 10)
			finished = strconv.FormatInt(p.FinishedAbove, 10)
		}
		if p.Metadata == kafkaMetaOther {
			finished = "?"
			other++
		}
		t.row(p.Topic, strconv.Itoa(int(p.Partition)), committed, strconv.FormatInt(p.End, 10), lag, finished)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "lag %d over %d partition(s) with a committed offset\n", v.Lag, len(v.Partitions)-v.NoCommit)
	if v.NoCommit > 0 {
		fmt.Fprintf(w, "%d partition(s) without a committed offset: the group starts there from its offset reset policy (kafkabroker reads from the oldest)\n", v.NoCommit)
	}
	if other > 0 {
		fmt.Fprintf(w, "%d partition(s) with commit metadata that is not the engine's finished offsets for that offset (?): another client's, or stale; a restart reads from the committed offset\n", other)
	}
	return nil
}
