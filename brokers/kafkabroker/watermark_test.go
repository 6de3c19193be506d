package kafkabroker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap"
)

// TestWatermark: the committable offset is the lowest offset not yet
// acked; acks above a gap wait until the gap is acked, and offsets may
// skip (a compacted topic).
func TestWatermark(t *testing.T) {
	w := newWatermark()
	require.Equal(t, int64(-1), w.offset())
	for _, o := range []int64{10, 11, 12, 14, 15} {
		w.add(o, 3)
	}
	require.Equal(t, 5, w.len())
	require.Equal(t, int64(15), w.bytes)
	require.Equal(t, int64(10), w.offset())

	d := func() *ackgap.Delivery { return &ackgap.Delivery{} }
	now := time.Now()
	require.True(t, w.ack(12, d(), now))
	require.True(t, w.ack(14, d(), now))
	require.Empty(t, w.advance(), "offset 10 holds the watermark")
	require.Equal(t, int64(10), w.offset())
	require.False(t, w.ack(13, d(), now), "13 was never read")
	require.False(t, w.ack(12, d(), now), "12 is already acked")

	require.True(t, w.ack(10, d(), now))
	got := w.advance()
	require.Len(t, got, 1)
	require.Equal(t, int64(10), got[0].offset)
	require.Equal(t, int64(11), w.offset(), "11 holds it now")

	require.True(t, w.ack(11, d(), now))
	got = w.advance()
	require.Equal(t, []int64{11, 12, 14}, offsets(got))
	require.Equal(t, int64(15), w.offset())
	require.Equal(t, 1, w.len())
	require.Equal(t, int64(3), w.bytes)

	require.True(t, w.ack(15, d(), now))
	require.Equal(t, []int64{15}, offsets(w.advance()))
	require.Equal(t, int64(16), w.offset(), "nothing outstanding: the offset after the last read")
	require.Equal(t, 0, w.len())
	require.Equal(t, int64(0), w.bytes)
}

// TestWatermarkLong: many records acked in reverse order pass the
// watermark in offset order, and the buffer compacts.
func TestWatermarkLong(t *testing.T) {
	w := newWatermark()
	const n = 1000
	for o := range int64(n) {
		w.add(o, 1)
	}
	for o := int64(n - 1); o >= 1; o-- {
		require.True(t, w.ack(o, &ackgap.Delivery{}, time.Now()))
	}
	require.Empty(t, w.advance())
	require.True(t, w.ack(0, &ackgap.Delivery{}, time.Now()))
	got := w.advance()
	require.Len(t, got, n)
	for i, r := range got {
		require.Equal(t, int64(i), r.offset)
	}
	require.Equal(t, int64(n), w.offset())
	require.Empty(t, w.entries, "compacted")
}

func offsets(rs []ackedRecord) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.offset
	}
	return out
}

// BenchmarkWatermark: one record read, acked out of order within a window
// of 64 (MaxInFlight), and passed by the watermark.
func BenchmarkWatermark(b *testing.B) {
	b.ReportAllocs()
	w := newWatermark()
	d := &ackgap.Delivery{}
	now := time.Now()
	const window = 64
	var next, acked int64
	for b.Loop() {
		w.add(next, 100)
		next++
		if next-acked == window {
			// Ack the window's records newest first: the oldest lets the
			// watermark pass all of them.
			for o := next - 1; o >= acked; o-- {
				w.ack(o, d, now)
			}
			w.advance()
			acked = next
		}
	}
}
