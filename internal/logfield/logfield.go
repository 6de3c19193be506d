// Package logfield renders values that come from the wire (event ids,
// message UUIDs) for log fields. It is the one place ackgap escapes them,
// so that every log line shows an id the same way its error texts do
// (ackgap.CheckEventID): a reader can copy it from either and search the
// other.
package logfield

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// ID returns id as a log field carries it: unchanged when it is valid
// UTF-8 without control characters (NUL, newline, escape sequences), the
// ids ackgap accepts in practice; otherwise quoted with Go escapes, every
// byte outside printable ASCII escaped (the %+q form ackgap.CheckEventID
// uses in its error text, quotes included), so that a log line never
// holds bytes that are not UTF-8 or that a terminal or a text log would
// interpret. An id of more than 1,024 bytes is cut there first (marked
// "..." inside the quotes): logs stay bounded whatever a producer sent.
// "" stays "".
func ID(id string) string {
	if plain(id) {
		return id
	}
	const limit = 1024
	cut := ""
	if len(id) > limit {
		id, cut = id[:limit], "..."
	}
	q := strconv.QuoteToASCII(id)
	return q[:len(q)-1] + cut + `"`
}

// plain reports whether s is valid UTF-8 without control characters and
// at most 1,024 bytes.
func plain(s string) bool {
	if len(s) > 1024 {
		return false
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || unicode.IsControl(r) {
			return false
		}
		i += size
	}
	return true
}
