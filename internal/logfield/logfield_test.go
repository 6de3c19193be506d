package logfield

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestID: ordinary ids are logged as they are; ids with bytes that are
// not UTF-8 or with control characters are quoted with Go escapes, as
// printable ASCII; long ones are cut.
func TestID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                "",
		"evt-1":           "evt-1",
		"commande-été-✓":  "commande-été-✓",
		"evt-\xff\xfe":    `"evt-\xff\xfe"`,
		"evt\x00x":        `"evt\x00x"`,
		"evt\nFAKE LINE":  `"evt\nFAKE LINE"`,
		"\x1b[31mred":     `"\x1b[31mred"`,
		"été\xff":         `"\u00e9t\u00e9\xff"`,
		"\u2028separator": "\u2028separator", // valid text, not a control character
	} {
		require.Equal(t, want, ID(in), "%+q", in)
	}
	long := strings.Repeat("a", 2000) + "\xff"
	got := ID(long)
	require.True(t, utf8.ValidString(got))
	require.Equal(t, `"`+strings.Repeat("a", 1024)+`..."`, got)
	require.Equal(t, `"`+strings.Repeat("b", 1024)+`..."`, ID(strings.Repeat("b", 1025)), "bounded even when valid")
}
