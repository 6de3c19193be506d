package kafkabroker

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// offsetsOf expands runs into offsets.
func offsetsOf(runs []offsetRun) []int64 {
	var out []int64
	for _, r := range runs {
		for o := r.start; o < r.end; o++ {
			out = append(out, o)
		}
	}
	return out
}

// span returns the offsets from start up to end, end excluded.
func span(start, end int64) []int64 { return offsetsOf([]offsetRun{{start, end}}) }

// TestFinishedRoundTrip: what the encoder writes for a commit of offset
// base, the decoder reads back for that base exactly: every finished
// offset above base and nothing else (a gap stays a gap), in both the
// run-length and the bitset form; offsets at or below base are left out.
func TestFinishedRoundTrip(t *testing.T) {
	cases := map[string]struct {
		base int64
		offs []int64
		want []int64
		kind byte
	}{
		"one long run":        {base: 100, offs: span(101, 300), want: span(101, 300), kind: finishedRuns},
		"a short run":         {base: 100, offs: []int64{101, 102, 103}, want: []int64{101, 102, 103}, kind: finishedBits},
		"gap after the base":  {base: 100, offs: []int64{150, 151}, want: []int64{150, 151}, kind: finishedRuns},
		"gaps stay gaps":      {base: 0, offs: []int64{2, 4, 6, 8, 10, 12, 14, 16, 18}, want: []int64{2, 4, 6, 8, 10, 12, 14, 16, 18}, kind: finishedBits},
		"below base left out": {base: 50, offs: []int64{10, 49, 50, 51, 53}, want: []int64{51, 53}},
		"large offsets":       {base: math.MaxInt64 - 10, offs: []int64{math.MaxInt64 - 3, math.MaxInt64 - 1}, want: []int64{math.MaxInt64 - 3, math.MaxInt64 - 1}},
		"offset zero base":    {base: 0, offs: []int64{1}, want: []int64{1}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			meta := encodeFinished(c.base, runsOf(c.offs), finishedMetadataMax)
			require.True(t, strings.HasPrefix(meta, finishedPrefix), meta)
			if c.kind != 0 {
				raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(meta, finishedPrefix))
				require.NoError(t, err)
				require.Equal(t, c.kind, raw[0], "the shorter form is sent")
			}
			runs, ok := decodeFinished(meta, c.base)
			require.True(t, ok)
			require.Equal(t, c.want, offsetsOf(runs))
			_, ok = decodeFinished(meta, c.base+1)
			require.False(t, ok, "metadata of another committed offset is ignored")
		})
	}
}

// TestFinishedRandomRoundTrip: random sets of finished offsets above a
// random base come back exactly, whichever form the encoder chose.
func TestFinishedRandomRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		base := rng.Int64N(1 << 40)
		density := rng.Float64()
		var offs []int64
		for o := base + 1; o < base+1+rng.Int64N(3000); o++ {
			if rng.Float64() < density {
				offs = append(offs, o)
			}
		}
		meta := encodeFinished(base, runsOf(offs), finishedMetadataMax)
		if len(offs) == 0 {
			require.Empty(t, meta)
			continue
		}
		if meta == "" {
			continue // too large: sent without the set
		}
		require.LessOrEqual(t, len(meta), finishedMetadataMax)
		runs, ok := decodeFinished(meta, base)
		require.True(t, ok)
		require.Equal(t, offs, offsetsOf(runs))
	}
}

// TestFinishedBounded: an encoding over the limit is not sent (the commit
// goes without the set: correctness never depends on it); the bitset
// keeps a dense set of thousands of offsets under Kafka's default 4 KiB.
func TestFinishedBounded(t *testing.T) {
	// Every other offset over 40,000: 20,000 runs, 5,000 bytes of bits.
	var sparse []int64
	for o := int64(1); o < 40000; o += 2 {
		sparse = append(sparse, o)
	}
	require.Empty(t, encodeFinished(0, runsOf(sparse), finishedMetadataMax))

	var dense []int64
	for o := int64(1); o < 20000; o++ {
		if o%3 != 0 {
			dense = append(dense, o)
		}
	}
	meta := encodeFinished(0, runsOf(dense), finishedMetadataMax)
	require.NotEmpty(t, meta)
	require.LessOrEqual(t, len(meta), finishedMetadataMax)
	runs, ok := decodeFinished(meta, 0)
	require.True(t, ok)
	require.Equal(t, dense, offsetsOf(runs))

	require.Empty(t, encodeFinished(0, runsOf([]int64{1, 2}), len(finishedPrefix)+4), "a limit too small for the set")
	require.Empty(t, encodeFinished(-1, runsOf([]int64{1, 2}), finishedMetadataMax), "no committed offset yet")
	require.Empty(t, encodeFinished(10, runsOf([]int64{3, 10}), finishedMetadataMax), "nothing above the base")

	long := finishedPrefix + strings.Repeat("A", finishedMetadataMax)
	_, ok = decodeFinished(long, 0)
	require.False(t, ok, "input over the bound is refused")
}

// sealed returns metadata for payload with a valid checksum: the decoder's
// checks after the checksum are what is tested.
func sealed(payload []byte) string {
	b := binary.BigEndian.AppendUint32(payload, crc32.Checksum(payload, castagnoli))
	return finishedPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// TestFinishedGarbageIgnored: metadata that is not this encoder's, or is
// damaged, yields no offset to skip.
func TestFinishedGarbageIgnored(t *testing.T) {
	good := encodeFinished(7, runsOf([]int64{9, 10, 12}), finishedMetadataMax)
	require.NotEmpty(t, good)
	runs := func(vals ...uint64) []byte {
		b := binary.AppendUvarint([]byte{finishedRuns}, 7)
		for _, v := range vals {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	bad := map[string]string{
		"empty":                  "",
		"foreign":                "owned-by-some-other-client",
		"other version":          "ackgap2:" + strings.TrimPrefix(good, finishedPrefix),
		"prefix only":            finishedPrefix,
		"not base64":             finishedPrefix + "!!!!****",
		"flipped character":      flip(good),
		"truncated":              good[:len(good)-3],
		"unknown kind":           sealed(append([]byte{'x'}, binary.AppendUvarint(nil, 7)...)),
		"no runs":                sealed(runs()),
		"run without length":     sealed(runs(1)),
		"zero-length run":        sealed(runs(1, 0)),
		"empty gap mid-way":      sealed(runs(1, 1, 0, 1)),
		"overflowing run":        sealed(runs(0, math.MaxUint64)),
		"overflowing gap":        sealed(runs(math.MaxInt64, 1)),
		"bitset trailing zero":   sealed(append(binary.AppendUvarint([]byte{finishedBits}, 7), 1, 0)),
		"bitset empty":           sealed(binary.AppendUvarint([]byte{finishedBits}, 7)),
		"base not a varint":      sealed([]byte{finishedRuns, 0xff, 0xff}),
		"base above the maximum": sealed(binary.AppendUvarint([]byte{finishedRuns}, math.MaxUint64)),
	}
	for name, meta := range bad {
		t.Run(name, func(t *testing.T) {
			got, ok := decodeFinished(meta, 7)
			require.False(t, ok)
			require.Empty(t, got)
		})
	}
	_, ok := decodeFinished(good, -1)
	require.False(t, ok, "no committed offset")
}

// flip changes one character of meta's encoded part.
func flip(meta string) string {
	b := []byte(meta)
	i := len(finishedPrefix) + 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// TestFinishedSet: the partition's set carries what was acked above the
// watermark and what the last owner recorded, forgets what fell below
// the committed offset, and bumps its version on each change.
func TestFinishedSet(t *testing.T) {
	f := newFinishedSet([]offsetRun{{20, 23}, {30, 31}})
	meta, v0 := f.encode(10, finishedMetadataMax)
	runs, ok := decodeFinished(meta, 10)
	require.True(t, ok)
	require.Equal(t, []int64{20, 21, 22, 30}, offsetsOf(runs))

	f.add(12)
	f.add(23)
	f.add(12)
	meta, v1 := f.encode(10, finishedMetadataMax)
	require.Equal(t, v0+2, v1, "a repeated add changes nothing")
	runs, ok = decodeFinished(meta, 10)
	require.True(t, ok)
	require.Equal(t, []int64{12, 20, 21, 22, 23, 30}, offsetsOf(runs))

	meta, _ = f.encode(21, finishedMetadataMax)
	runs, ok = decodeFinished(meta, 21)
	require.True(t, ok)
	require.Equal(t, []int64{22, 23, 30}, offsetsOf(runs))
	require.Equal(t, 1, f.size(), "offsets below the committed one forgotten")

	f.prune(31)
	meta, _ = f.encode(31, finishedMetadataMax)
	require.Empty(t, meta)
}

// TestSkipCursor: records arriving in offset order are matched against
// the inherited runs; offsets outside them, gaps included, are not.
func TestSkipCursor(t *testing.T) {
	c := skipCursor{runs: []offsetRun{{5, 7}, {9, 10}}}
	var got []int64
	for _, o := range []int64{3, 4, 5, 6, 7, 8, 9, 10, 11} {
		if c.finished(o) {
			got = append(got, o)
		}
	}
	require.Equal(t, []int64{5, 6, 9}, got)
}

// TestFinishedAbove: the exported count agrees with the decoder, for both
// encodings, and is not ok for metadata that records nothing for the
// committed offset given.
func TestFinishedAbove(t *testing.T) {
	t.Parallel()
	for _, offs := range [][]int64{span(101, 300), {101, 102, 103}, {150, 151}, {102, 104, 106, 108, 110, 112, 114, 116, 118}} {
		meta := encodeFinished(100, runsOf(offs), finishedMetadataMax)
		require.True(t, strings.HasPrefix(meta, FinishedMetadataPrefix))
		n, ok := FinishedAbove(meta, 100)
		require.True(t, ok)
		require.Equal(t, int64(len(offs)), n)
		_, ok = FinishedAbove(meta, 101)
		require.False(t, ok, "a set of another committed offset")
	}
	for _, meta := range []string{"", "x", "ackgap1:", "ackgap1:AAAA", "ackgap2:" + strings.Repeat("A", 10)} {
		n, ok := FinishedAbove(meta, 100)
		require.False(t, ok, meta)
		require.Zero(t, n, meta)
	}
}
