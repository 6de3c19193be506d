package ackgapvet

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeNames: a decode's failure is no failed work, whatever the
// codec calls it (field trial, wave 44: goavro's NativeFromBinary on
// credit-origination's consumer); a send or a save is work.
func TestDecodeNames(t *testing.T) {
	for _, name := range []string{"Unmarshal", "NativeFromBinary", "NativeFromTextual", "Deserialize", "DeserializeInto", "ParseEvent", "FromJSON"} {
		require.True(t, decodeCall.MatchString(name), name)
	}
	for _, name := range []string{"Send", "SaveOrder", "Publish", "BinaryFromNative", "Serialize"} {
		require.False(t, decodeCall.MatchString(name), name)
	}
}
