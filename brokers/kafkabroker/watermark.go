package kafkabroker

import (
	"sort"
	"time"

	"github.com/ackgap/ackgap"
)

// watermark tracks the records of one partition that were read and are
// not yet below the partition's committable offset. Its offset is the
// lowest offset not yet acked (or, with nothing outstanding, the offset
// after the last record read): everything below it was acked, so it is
// the offset to commit. A record that is nacked, failing or slow holds it
// back however many later records were acked. Not safe for concurrent
// use: one partition loop owns it.
type watermark struct {
	entries []wmEntry // offset order; entries[head:] are live
	head    int
	next    int64 // offset after the last record added; -1 before the first
	bytes   int64 // size of the live entries
}

// wmEntry is one record read from the partition.
type wmEntry struct {
	offset  int64
	size    int64
	acked   bool
	ackedAt time.Time
	d       *ackgap.Delivery // the delivery that was acked
}

// ackedRecord is a record the watermark passed: acked, and now covered by
// the partition's committable offset.
type ackedRecord struct {
	offset  int64
	ackedAt time.Time
	d       *ackgap.Delivery
}

func newWatermark() *watermark { return &watermark{next: -1} }

// add records offset, read from the partition; offsets must grow.
func (w *watermark) add(offset, size int64) {
	w.entries = append(w.entries, wmEntry{offset: offset, size: size})
	w.next = offset + 1
	w.bytes += size
}

// len returns how many records are outstanding (read, not yet passed).
func (w *watermark) len() int { return len(w.entries) - w.head }

// ack marks offset acked by d at at; it returns false when offset is not
// outstanding.
func (w *watermark) ack(offset int64, d *ackgap.Delivery, at time.Time) bool {
	live := w.entries[w.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].offset >= offset })
	if i == len(live) || live[i].offset != offset || live[i].acked {
		return false
	}
	live[i].acked, live[i].ackedAt, live[i].d = true, at, d
	return true
}

// advance drops the acked records at the front and returns them; the
// offset then is w.offset().
func (w *watermark) advance() []ackedRecord {
	var out []ackedRecord
	for w.head < len(w.entries) && w.entries[w.head].acked {
		e := w.entries[w.head]
		out = append(out, ackedRecord{offset: e.offset, ackedAt: e.ackedAt, d: e.d})
		w.bytes -= e.size
		w.entries[w.head] = wmEntry{}
		w.head++
	}
	if w.head > 0 && w.head >= len(w.entries)/2 {
		// Compact so the slice does not grow without bound.
		n := copy(w.entries, w.entries[w.head:])
		clear(w.entries[n:])
		w.entries = w.entries[:n]
		w.head = 0
	}
	return out
}

// offset returns the committable offset: the lowest outstanding offset,
// or the offset after the last record read; -1 before any record.
func (w *watermark) offset() int64 {
	if w.head < len(w.entries) {
		return w.entries[w.head].offset
	}
	return w.next
}
