package kafkabroker

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"sync"
)

// The finished offsets above a partition's watermark travel in the
// OffsetCommit's metadata string, as the Confluent Parallel Consumer keeps
// its incomplete offsets there: a restarted member skips the records the
// last one finished above the committed offset instead of handing them to
// the handler again (where the inbox would skip them as duplicates). It is
// an optimisation only: a commit without the set, a set that was dropped,
// too large, foreign or damaged, replays those records and the inbox skips
// them, as before.
//
// Format: finishedPrefix, then the unpadded URL-safe base64 of
//
//	kind (1 byte: finishedRuns or finishedBits)
//	base (uvarint): the committed offset the set belongs to
//	body
//	CRC-32C (4 bytes, big endian) of everything before it
//
// finishedRuns: uvarint run lengths over the offsets base+1, base+2, ...,
// alternating not finished / finished, starting with not finished (that
// first run may be 0, no other run may), ending with a finished run.
// finishedBits: a bitset over base+1, base+2, ...: bit i (byte i/8, least
// significant bit first) set when base+1+i is finished; the last byte is
// not zero. The encoder sends the shorter of the two.
const (
	// finishedPrefix marks metadata written by this encoder, version 1;
	// anything else (another client's metadata, an older or newer format)
	// is ignored.
	finishedPrefix = "ackgap1:"
	// finishedMetadataMax is the most bytes of metadata a partition's
	// commit carries (Kafka's default offset.metadata.max.bytes, 4096):
	// a set whose encoding is longer is not sent.
	finishedMetadataMax = 4096
	finishedRuns        = 'r'
	finishedBits        = 'b'
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// offsetRun is the offsets from start up to end, end excluded.
type offsetRun struct{ start, end int64 }

// runsOf returns the sorted distinct offsets offs as runs.
func runsOf(offs []int64) []offsetRun {
	var runs []offsetRun
	for _, o := range offs {
		switch n := len(runs); {
		case n > 0 && runs[n-1].end == o:
			runs[n-1].end++
		case n > 0 && o < runs[n-1].end:
			// a duplicate
		default:
			runs = append(runs, offsetRun{o, o + 1})
		}
	}
	return runs
}

// encodeFinished returns the metadata for a commit of offset base whose
// finished offsets above it are runs (sorted, not overlapping; offsets at
// or below base are left out), or "" when there are none above base or
// the encoding would be longer than limit bytes.
func encodeFinished(base int64, runs []offsetRun, limit int) string {
	if base < 0 {
		return ""
	}
	above := make([]offsetRun, 0, len(runs))
	for _, r := range runs {
		r.start = max(r.start, base+1)
		if r.end > r.start {
			above = append(above, r)
		}
	}
	if len(above) == 0 {
		return ""
	}
	head := binary.AppendUvarint([]byte{0}, uint64(base))

	// Runs.
	rl := slices.Clone(head)
	rl[0] = finishedRuns
	at := base + 1
	for _, r := range above {
		rl = binary.AppendUvarint(rl, uint64(r.start-at))
		rl = binary.AppendUvarint(rl, uint64(r.end-r.start))
		at = r.end
	}
	best := rl

	// Bits, when they can be shorter.
	span := above[len(above)-1].end - (base + 1)
	if bytes := (span + 7) / 8; bytes < int64(len(rl)-len(head)) {
		bs := slices.Clone(head)
		bs[0] = finishedBits
		bits := make([]byte, bytes)
		for _, r := range above {
			for o := r.start; o < r.end; o++ {
				i := o - (base + 1)
				bits[i/8] |= 1 << (i % 8)
			}
		}
		best = append(bs, bits...)
	}
	best = binary.BigEndian.AppendUint32(best, crc32.Checksum(best, castagnoli))
	if len(finishedPrefix)+base64.RawURLEncoding.EncodedLen(len(best)) > limit {
		return ""
	}
	return finishedPrefix + base64.RawURLEncoding.EncodeToString(best)
}

// decodeFinished returns the finished offsets above base that meta, a
// partition's committed metadata, records for a commit of offset base, as
// sorted runs; ok false when meta is not this encoder's (another format,
// another version, damaged) or belongs to another offset than base. Input
// over finishedMetadataMax bytes is refused without being decoded.
func decodeFinished(meta string, base int64) (runs []offsetRun, ok bool) {
	rest, found := strings.CutPrefix(meta, finishedPrefix)
	if !found || len(meta) > finishedMetadataMax || base < 0 {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) < 1+1+4 {
		return nil, false
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, false
	}
	kind := body[0]
	got, n := binary.Uvarint(body[1:])
	if n <= 0 || got > math.MaxInt64 || int64(got) != base {
		return nil, false
	}
	body = body[1+n:]
	switch kind {
	case finishedRuns:
		at := base + 1
		first := true
		for len(body) > 0 {
			gap, n := binary.Uvarint(body)
			if n <= 0 {
				return nil, false
			}
			body = body[n:]
			length, n := binary.Uvarint(body)
			if n <= 0 || length == 0 || (gap == 0 && !first) {
				return nil, false
			}
			body = body[n:]
			if gap > uint64(math.MaxInt64-at) || length > uint64(math.MaxInt64-at-int64(gap)) {
				return nil, false
			}
			start := at + int64(gap)
			runs = append(runs, offsetRun{start, start + int64(length)})
			at = start + int64(length)
			first = false
		}
	case finishedBits:
		if len(body) == 0 || body[len(body)-1] == 0 {
			return nil, false
		}
		var offs []int64
		for i, by := range body {
			for j := range 8 {
				if by&(1<<j) != 0 {
					offs = append(offs, base+1+int64(i)*8+int64(j))
				}
			}
		}
		runs = runsOf(offs)
	default:
		return nil, false
	}
	if len(runs) == 0 {
		return nil, false
	}
	return runs, true
}

// finishedSet is one claimed partition's record of the offsets acked above
// its watermark, which its commits carry in their metadata (see
// encodeFinished). The partition loop adds to it; the committer encodes it
// for each commit. Every offset in it was finished (acked: applied, a
// duplicate, or dead-lettered), so a commit of any base may carry the ones
// above that base. Safe for concurrent use.
type finishedSet struct {
	mu sync.Mutex
	// offs are offsets acked above the watermark, inherited the runs the
	// claim's committed metadata recorded (finished by the last owner).
	offs      map[int64]struct{}
	inherited []offsetRun
	// version counts the changes: the committer commits the set again
	// when it moved since its last accepted commit.
	version uint64
}

func newFinishedSet(inherited []offsetRun) *finishedSet {
	// A copy: pruning works in place, and the claim's skipCursor walks
	// the same runs.
	return &finishedSet{offs: make(map[int64]struct{}), inherited: slices.Clone(inherited)}
}

// add records offset as finished above the watermark.
func (f *finishedSet) add(offset int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.offs[offset]; ok {
		return
	}
	f.offs[offset] = struct{}{}
	f.version++
}

// prune forgets the offsets below wm, the partition's watermark.
func (f *finishedSet) prune(wm int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruneLocked(wm)
}

func (f *finishedSet) pruneLocked(wm int64) {
	for o := range f.offs {
		if o < wm {
			delete(f.offs, o)
		}
	}
	kept := f.inherited[:0]
	for _, r := range f.inherited {
		if r.end > wm {
			kept = append(kept, r)
		}
	}
	f.inherited = kept
}

// size returns how many offsets the set holds (inherited runs not
// counted).
func (f *finishedSet) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.offs)
}

// encode returns the metadata for a commit of offset base (see
// encodeFinished, limit bytes at most) and the set's version. Offsets
// below base are forgotten.
func (f *finishedSet) encode(base int64, limit int) (string, uint64) {
	f.mu.Lock()
	f.pruneLocked(base)
	offs := make([]int64, 0, len(f.offs)+len(f.inherited))
	for o := range f.offs {
		offs = append(offs, o)
	}
	inherited := slices.Clone(f.inherited)
	version := f.version
	f.mu.Unlock()
	if len(offs) == 0 && len(inherited) == 0 {
		return "", version
	}
	slices.Sort(offs)
	runs := mergeRuns(runsOf(offs), inherited)
	return encodeFinished(base, runs, limit), version
}

// mergeRuns returns the union of two sorted run lists, sorted, with
// touching or overlapping runs joined.
func mergeRuns(a, b []offsetRun) []offsetRun {
	if len(b) == 0 {
		return a
	}
	all := append(slices.Clone(a), b...)
	slices.SortFunc(all, func(x, y offsetRun) int {
		switch {
		case x.start < y.start:
			return -1
		case x.start > y.start:
			return 1
		}
		return 0
	})
	out := all[:0]
	for _, r := range all {
		if n := len(out); n > 0 && r.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, r.end)
			continue
		}
		out = append(out, r)
	}
	return out
}

// skipCursor walks a claim's inherited runs as its records arrive in
// offset order, telling which ones the last owner finished.
type skipCursor struct {
	runs []offsetRun
}

// finished reports whether offset is in the runs; offsets must be asked
// in increasing order.
func (c *skipCursor) finished(offset int64) bool {
	for len(c.runs) > 0 && c.runs[0].end <= offset {
		c.runs = c.runs[1:]
	}
	return len(c.runs) > 0 && c.runs[0].start <= offset
}

// FinishedMetadataPrefix starts the OffsetCommit metadata in which the
// watermark engine ([Subscriber], [ParallelSubscriber], [BatchConsumer])
// records the offsets it finished above the committed one, version 1 of
// the encoding (see "Finished offsets" at [ParallelSubscriber]).
const FinishedMetadataPrefix = finishedPrefix

// FinishedAbove returns how many offsets above committed the metadata of
// a partition's committed offset records as finished (acked) by the
// watermark engine: the records a member claiming the partition at that
// offset settles without handing them out. ok is false when metadata
// records none: empty, another client's, another version, damaged, over
// 4 KiB, or written for another offset than committed (a stale set, which
// the engine ignores too). It only decodes: safe for concurrent use, no
// I/O.
func FinishedAbove(metadata string, committed int64) (n int64, ok bool) {
	runs, ok := decodeFinished(metadata, committed)
	if !ok {
		return 0, false
	}
	for _, r := range runs {
		n += r.end - r.start
	}
	return n, true
}
