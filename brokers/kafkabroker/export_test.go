package kafkabroker

// DecodeFinished returns the finished offsets above base that meta, a
// partition's committed metadata, records (nil when it records none or is
// not this package's): decodeFinished for the external tests.
func DecodeFinished(meta string, base int64) []int64 {
	runs, ok := decodeFinished(meta, base)
	if !ok {
		return nil
	}
	var out []int64
	for _, r := range runs {
		for o := r.start; o < r.end; o++ {
			out = append(out, o)
		}
	}
	return out
}

// LagOf is lagOf for the external tests.
var LagOf = lagOf
