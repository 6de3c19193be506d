package ackgapvet

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMergeRepeats: repeats of a per-function check in one function are one
// finding naming the other lines; other checks and other functions stay.
func TestMergeRepeats(t *testing.T) {
	in := []Finding{
		{Check: "sleep", File: "a.go", Line: 10, Function: "drain", Message: "sleeps"},
		{Check: "effect", File: "a.go", Line: 11, Function: "drain", Message: "posts"},
		{Check: "effect", File: "a.go", Line: 12, Function: "drain", Message: "posts again"},
		{Check: "sleep", File: "a.go", Line: 14, Function: "drain", Message: "sleeps"},
		{Check: "sleep", File: "a.go", Line: 20, Function: "wait", Message: "sleeps"},
		{Check: "sleep", File: "a.go", Line: 22, Function: "drain", Message: "sleeps"},
	}
	out := mergeRepeats(in)
	require.Len(t, out, 4)
	require.Equal(t, "sleeps (the same in drain at line 14, 22)", out[0].Message)
	require.Equal(t, "posts", out[1].Message)
	require.Equal(t, "posts again", out[2].Message, "effects are separate causes")
	require.Equal(t, 20, out[3].Line)
	require.Equal(t, "sleeps", out[3].Message)

	out = mergeRepeats([]Finding{
		{Check: "effect", File: "b.go", Line: 22, Message: "UpdateItem repeats"},
		{Check: "idemkey", File: "b.go", Line: 22, Message: "increments"},
		{Check: "effect", File: "b.go", Line: 30, Message: "posts"},
	})
	require.Equal(t, []string{"idemkey", "effect"}, []string{out[0].Check, out[1].Check}, "the effect on the idemkey's line is the same cause")
	require.Equal(t, 30, out[1].Line)
}
