package ackgapvet

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKnownVersion: the zero pseudo-version a require line carries under a
// replace directive is no version to report (SARIF driver.version, -version).
func TestKnownVersion(t *testing.T) {
	require.Equal(t, "(devel)", knownVersion("v0.0.0-00010101000000-000000000000"))
	require.Equal(t, "v0.9.0", knownVersion("v0.9.0"))
	require.Equal(t, "v0.0.0-20261206120000-9c0cd46abcde", knownVersion("v0.0.0-20261206120000-9c0cd46abcde"))
}
