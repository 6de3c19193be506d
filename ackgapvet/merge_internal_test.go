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
}
